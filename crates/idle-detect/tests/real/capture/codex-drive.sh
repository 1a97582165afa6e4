#!/bin/bash
# Captures one agent at one width: see ../README.md. Needs root (unshare -n), tmux, curl, nsenter.
HERE=$(cd "$(dirname "$0")" && pwd)
: "${OUT:?set OUT to a scratch directory}" "${HYOKA:?set HYOKA to the hyoka binary}" "${HYOKA_AGENTS_DIR:?set HYOKA_AGENTS_DIR}"
# codex-drive.sh COLS
COLS=$1; NAME=codex$COLS; PROFILE=codex
EXTRA_TOML='approval_policy = "on-request"' "$HERE"/live.sh $NAME $COLS "$HERE/codex-cap.yaml" -- codex --no-daemon
source "$HERE/lib.sh"
rm -f $D/caps/INDEX
waitfor "Use existing model" 40; sleep 1
snap nudge blocked; $T send-keys -t a 2
waitfor "Ask Codex" 20; sleep 2
snap idle-start idle
$T send-keys -t a -l "explain the repo"; sleep 1
snap draft blocked
$T send-keys -t a Enter; sleep 2
snap before-first-byte working
sleep 5
snap streaming working
waitstub idle 40; waitfor "Worked for" 20; sleep 1
snap turn-ended idle
$T send-keys -t a -l "touch the file"; sleep 0.5; $T send-keys -t a Enter
waitfor "Would you like|proceed|Allow" 40; sleep 1
snap approval blocked
$T send-keys -t a y
waitfor "Worked for [^\n]*$" 40; sleep 2
waitstub idle 40; sleep 1
snap after-approval idle
"$HERE"/stop.sh $NAME
