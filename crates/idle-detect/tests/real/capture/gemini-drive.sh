#!/bin/bash
# Captures one agent at one width: see ../README.md. Needs root (unshare -n), tmux, curl, nsenter.
HERE=$(cd "$(dirname "$0")" && pwd)
: "${OUT:?set OUT to a scratch directory}" "${HYOKA:?set HYOKA to the hyoka binary}" "${HYOKA_AGENTS_DIR:?set HYOKA_AGENTS_DIR}"
COLS=$1; NAME=gemini$COLS; PROFILE=gemini
"$HERE"/live.sh $NAME $COLS "$HERE/gemini-cap.yaml" -- gemini
source "$HERE/lib.sh"
rm -f $D/caps/INDEX
waitfor "Do you trust the files" 60; sleep 1
snap trust blocked
$T send-keys -t a Enter
waitfor "Type your message" 60; sleep 4
snap idle-start idle
$T send-keys -t a -l "explain the repo"; sleep 1.5
snap draft blocked
$T send-keys -t a Enter; sleep 2
snap before-first-byte working
sleep 5
snap streaming working
waitstub idle 40; sleep 3
snap turn-ended idle
$T send-keys -t a -l "write the file"; sleep 1; $T send-keys -t a Enter
waitfor "Allow|Apply this change|allow" 40; sleep 1
snap permission blocked
$T send-keys -t a Enter
waitstub idle 40; sleep 3
snap after-approval idle
$T send-keys -t a -l "/model"; sleep 1; $T send-keys -t a Enter
sleep 3
snap model-dialog blocked
$T send-keys -t a Escape; sleep 2
snap idle-end idle
"$HERE"/stop.sh $NAME
