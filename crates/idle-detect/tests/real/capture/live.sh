#!/bin/bash
# usage: live.sh NAME COLS SCRIPT -- agent argv...   (runs inside a fresh net namespace)
set -e
NAME=$1; COLS=$2; SCRIPT=$3; shift 4
D=$OUT/$NAME; rm -rf $D; mkdir -p $D/work $D/codex-home $D/claude $D/gemini/.gemini
H=$HYOKA
cat > $D/inner.sh <<IN
#!/bin/bash
ip link set lo up
$H model-stub serve --script $SCRIPT --listen 127.0.0.1:8787 --log $D/requests.jsonl > $D/stub.out 2>$D/stub.err &
echo \$! > $D/stub.pid
for i in \$(seq 50); do grep -q http $D/stub.out && break; sleep 0.1; done
cd $D/work
export CODEX_HOME=$D/codex-home HYOKA_MODEL_STUB_KEY=k ANTHROPIC_BASE_URL=http://127.0.0.1:8787 ANTHROPIC_API_KEY=k CLAUDE_CONFIG_DIR=$D/claude CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:8787 GEMINI_API_KEY=k GEMINI_CLI_HOME=$D/gemini IS_SANDBOX=1 PATH=$HYOKA_AGENTS_DIR/node_modules/.bin:\$PATH
tmux -S $D/tmux.sock new-session -d -s a -x $COLS -y 40 -- $*
tmux -S $D/tmux.sock set -g window-size manual
sleep infinity
IN
chmod +x $D/inner.sh
cat > $D/codex-home/config.toml <<TOML
$EXTRA_TOML
model_provider = "stub"
model = "gpt-5.5"
[model_providers.stub]
name = "stub"
base_url = "http://127.0.0.1:8787/v1"
wire_api = "responses"
env_key = "HYOKA_MODEL_STUB_KEY"
TOML
echo '{"security":{"auth":{"selectedType":"gemini-api-key"}}}' > $D/gemini/.gemini/settings.json
echo '{"hasCompletedOnboarding":true,"theme":"dark","customApiKeyResponses":{"approved":["k"],"rejected":[]}}' > $D/claude/.claude.json
setsid unshare -n $D/inner.sh > $D/inner.log 2>&1 < /dev/null &
echo $! > $D/unshare.pid
