//! Serves a script given as the first argument on an ephemeral loopback port, printing the
//! base URL: `cargo run -p hyoka-model-stub --example serve -- script.yaml`.

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: serve SCRIPT")?;
    let script = hyoka_model_stub::Script::from_yaml(&std::fs::read_to_string(path)?)?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    #[expect(clippy::print_stdout, reason = "the example's output")]
    {
        println!("http://{}", listener.local_addr()?);
    }
    hyoka_model_stub::Stub::new(script)
        .serve(listener, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
