#!/bin/bash
# Captures one agent at one width: see ../README.md. Needs root (unshare -n), tmux, curl, nsenter.
HERE=$(cd "$(dirname "$0")" && pwd)
: "${OUT:?set OUT to a scratch directory}" "${HYOKA:?set HYOKA to the hyoka binary}" "${HYOKA_AGENTS_DIR:?set HYOKA_AGENTS_DIR}"
COLS=$1; NAME=claude$COLS; PROFILE=claude-code
"$HERE"/live.sh $NAME $COLS "$HERE/claude-cap.yaml" -- claude --permission-mode default
source "$HERE/lib.sh"
rm -f $D/caps/INDEX
waitfor "trust this folder" 40; sleep 1
snap trust blocked
$T send-keys -t a Down; sleep 0.5; $T send-keys -t a Enter
waitfor "for shortcuts|❯ *$" 30; sleep 3
snap idle-start idle
$T send-keys -t a -l "explain the repo"; sleep 1
snap draft blocked
$T send-keys -t a Enter; sleep 2
snap before-first-byte working
sleep 5
snap streaming working
waitstub idle 40; sleep 3
snap turn-ended idle
$T send-keys -t a -l "write the file"; sleep 0.5; $T send-keys -t a Enter
waitfor "Do you want to" 40; sleep 1
snap permission blocked
$T send-keys -t a Enter
waitstub idle 40; sleep 3
snap after-approval idle
$T send-keys -t a -l "/resume"; sleep 0.5; $T send-keys -t a Enter
sleep 3
snap resume-picker blocked
$T send-keys -t a Escape; sleep 2
$T send-keys -t a C-r; sleep 2
snap history-search blocked
$T send-keys -t a Escape; sleep 2
snap idle-end idle
"$HERE"/stop.sh $NAME
