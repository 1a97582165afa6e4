# sourced: NAME set
D=$OUT/$NAME; H=$HYOKA; T="tmux -S $D/tmux.sock"
mkdir -p $D/caps
st(){ nsenter --net=/proc/$(cat $D/stub.pid)/ns/net curl -s 127.0.0.1:8787/_stub/state | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["state"], ",".join(c["state"]+"/"+str(c["turn"]) for c in d["conversations"]))'; }
# snap LABEL TRUTH : capture with attributes, record truth and stub state
snap(){ local f=$D/caps/$1.ans; $T capture-pane -p -e -t a > $f; echo -e "$1\t$2\t$(st)\t$($H detect --profile $PROFILE --screen $f)" | tee -a $D/caps/INDEX; }
waitfor(){ # waitfor REGEX [timeout]
  for i in $(seq ${2:-60}); do $T capture-pane -p -t a | grep -qE "$1" && return 0; sleep 0.5; done; echo "timeout waiting for $1"; return 1; }
waitstub(){ for i in $(seq ${2:-60}); do st | grep -q "^$1" && return 0; sleep 0.5; done; echo "timeout stub $1"; return 1; }
