//! Handing a long list on item by item without holding it twice.

/// The items of `items`, first to last, the list giving its memory back as it empties: a long
/// suite's evals in one form and the next are never both held whole. Each shrink halves the
/// list at most, so the moves add up to fewer than the items.
pub(crate) fn draining<T>(mut items: Vec<T>) -> impl Iterator<Item = T> {
    items.reverse();
    std::iter::from_fn(move || {
        let item = items.pop()?;
        if items.len() < items.capacity() / 2 {
            items.shrink_to_fit();
        }
        Some(item)
    })
}

#[cfg(test)]
mod tests {
    use super::draining;

    #[test]
    fn items_come_first_to_last_each_once() {
        let mut items = draining((0..1000_usize).map(|i| vec![i; 3]).collect());
        assert_eq!(items.next(), Some(vec![0; 3]));
        let rest: Vec<Vec<usize>> = items.collect();
        assert_eq!(rest.len(), 999);
        assert!(rest.iter().enumerate().all(|(i, v)| v == &[i + 1; 3]));
        assert_eq!(draining(Vec::<u8>::new()).count(), 0);
    }
}
