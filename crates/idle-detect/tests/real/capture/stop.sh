#!/bin/bash
# stop.sh NAME: the tmux server, the namespace's process group, and any agent process still in
# the scenario's work directory (Gemini CLI 0.61 relaunches itself after the trust dialog, in a
# session of its own that outlives the tmux server).
D=$OUT/$1
tmux -S $D/tmux.sock kill-server 2>/dev/null
kill -- -$(cat $D/unshare.pid) 2>/dev/null
for p in /proc/[0-9]*; do
  case "$(readlink $p/cwd 2>/dev/null)" in "$D/work"|"$D/work (deleted)") kill ${p#/proc/} 2>/dev/null;; esac
done
true
