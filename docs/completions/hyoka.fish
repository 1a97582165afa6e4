# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_hyoka_global_optspecs
    string join \n v/verbose q/quiet h/help V/version
end

function __fish_hyoka_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_hyoka_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_hyoka_using_subcommand
    set -l cmd (__fish_hyoka_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c hyoka -n "__fish_hyoka_needs_command" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides'
complete -c hyoka -n "__fish_hyoka_needs_command" -s q -l quiet -d 'Only errors on stderr'
complete -c hyoka -n "__fish_hyoka_needs_command" -s h -l help -d 'Print help'
complete -c hyoka -n "__fish_hyoka_needs_command" -s V -l version -d 'Print version'
complete -c hyoka -n "__fish_hyoka_needs_command" -f -a "run" -d 'Run an agent command (or a suite of evals) in isolated workspaces and report'
complete -c hyoka -n "__fish_hyoka_needs_command" -f -a "clean" -d 'Stop what abandoned runs left behind (processes, cgroups, workspaces)'
complete -c hyoka -n "__fish_hyoka_needs_command" -f -a "ps" -d 'List live runs, their evals, workspaces and processes'
complete -c hyoka -n "__fish_hyoka_needs_command" -f -a "detect" -d 'Judge a recorded agent session: working, idle or blocked, with the evidence'
complete -c hyoka -n "__fish_hyoka_needs_command" -f -a "demo" -d 'Show what hyoka does, end to end, against the built-in simulated agent'
complete -c hyoka -n "__fish_hyoka_needs_command" -f -a "doctor" -d 'Show which containment layers this machine gives and what falls back to what'
complete -c hyoka -n "__fish_hyoka_needs_command" -f -a "report" -d 'Work with run reports'
complete -c hyoka -n "__fish_hyoka_needs_command" -f -a "respawn" -d 'Run an interactive agent under the respawn controller: cycle it when it is idle'
complete -c hyoka -n "__fish_hyoka_needs_command" -f -a "hook" -d 'Forward a Claude Code hook (payload on stdin) to the running respawn controller'
complete -c hyoka -n "__fish_hyoka_needs_command" -f -a "sessions" -d 'List the supervised sessions: name, agent, state with its evidence, cycles'
complete -c hyoka -n "__fish_hyoka_needs_command" -f -a "wait" -d 'Wait until a supervised session is idle, working or blocked (exit 124 on timeout)'
complete -c hyoka -n "__fish_hyoka_needs_command" -f -a "send" -d 'Type text into a supervised session, verified: exit 0 delivered, 3 refused (nothing typed), 4 typed but not confirmed'
complete -c hyoka -n "__fish_hyoka_needs_command" -f -a "tasks" -d 'Work with Harbor task folders (Terminal-Bench 2 and the datasets built on its format)'
complete -c hyoka -n "__fish_hyoka_needs_command" -f -a "model-stub" -d 'A scripted model server for running real agents offline'
complete -c hyoka -n "__fish_hyoka_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l run-id -d 'The run id: [A-Za-z0-9][A-Za-z0-9._-]{0,63}. Default: YYYYMMDD-HHMMSS-xxxxxx' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l reports -d 'Where reports are written (reports/<run_id>/…)' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l workspace-root -d 'Where workspaces are created. Default: the system temp directory' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l starter -d 'A directory copied into the workspace before the agent starts' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l keep-workspace -d 'When to keep the workspace: never, on-failure or always' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l timeout -d 'Stop the agent after this long (30s, 10m, 1h; 0 disables). Default: 10m' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l grace -d 'How long processes get between SIGTERM and SIGKILL. Default: 5s' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l max-turns -d 'Stop after this many turns (assistant messages); 0 disables. Default: 25' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l max-files -d 'Stop after this many files created or changed; 0 disables. Default: 50' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l max-output-size -d 'Stop after this many bytes of files created or changed (1048576, 512KiB, 1MiB, 1MB); 0 disables. Default: 1MiB' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l max-session-actions -d 'Stop after this many tool calls; 0 disables. Default: 50' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l max-tokens -d 'Stop after the agent reports this many tokens (all kinds); 0 (the default) disables' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l max-cost -d 'Stop after the agent reports spending more than this many US dollars; 0 disables' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l max-memory -d 'Each process tree of an eval may use this much memory (512MiB, 2GB; swap included); hitting it ends the trial with `max_memory`. 0 (the default) disables. A cgroup limit: refused where the memory controller is missing, unless --sandbox=best-effort' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l max-pids -d 'Each process tree of an eval may have this many processes at once (a fork bomb is held there); 0 (the default) disables. A cgroup limit, like --max-memory' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l cpus -d 'Each process tree of an eval may use this many CPUs\' time (2, 1.5, 0.25); 0 (the default) disables. A cgroup limit, like --max-memory' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l max-disk -d 'Stop when the workspace\'s changes, the private /tmp and the isolated home hold more than this together (checked every half second); 0 (the default) disables' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l epochs -d 'Run each eval this many times (trials), each in its own workspace. Default: 1' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l retries -d 'Rerun a trial that ended in an infrastructure error up to N times, with backoff' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l fail-on -d 'Exit 1 when a trial did not pass (failure), errored or did not run (error), or never' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l events -d 'Where turns and tool calls come from: none, stream-json (Claude Code), codex-json (`codex exec --json`), gemini-stream-json (the agent\'s stdout), jsonl (lines appended to $HYOKA_EVENTS), or auto (by the program\'s name). Default: none' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l suite -d 'Run the evals of a YAML suite file instead of one command' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l workers -d 'How many evals run at once' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l shard -d 'Run only shard I of N of the suite (1-based, N at most 10000; evals dealt round-robin)' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l file -d 'Inject a file or directory into the workspace after the starter: SRC or SRC:DEST (DEST relative to the workspace; default: SRC\'s name). Repeatable' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l build -d 'After the agent stops, run this shell command in the workspace as the build phase' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l build-timeout -d 'The build phase\'s timeout. Default: 10m' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l review -d 'After the build, run this shell command as the review phase; it may print a JSON verdict `{"pass": bool, "score": number, "notes": "…"}`' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l review-timeout -d 'The review phase\'s timeout. Default: 10m' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l pass-env -d 'With --isolate-home, also pass this environment variable through. Repeatable' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l sandbox -d 'Run every process of the eval in a sandbox, root or not: the host read-only, a private /tmp, the home, the runtime directory and /run hidden, a minimal /dev, no capabilities, Landlock and seccomp; writes only to the workspace, the isolated home and /tmp. `--sandbox` refuses to run where a layer is missing; `--sandbox=best-effort` runs with what there is and records what was missing' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l sandbox-read -d 'With --sandbox, show this path (inside the hidden home, for example an agent installed there) read-only. Repeatable' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l network -d 'The network of every process of the eval: host (the default) or none (a network namespace with only loopback)' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l tasks -d 'Run Harbor task folders: DIR is one task (it holds a task.toml) or a dataset (a folder of them). One eval per task, its id the folder\'s name; give the agent with --agent or after `--` (it gets the instruction as $HYOKA_PROMPT)' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l agent -d 'With --tasks (or a suite\'s tasks:): Harbor\'s oracle (runs solution/solve.sh) or nop agent (runs nothing) instead of a command' -r -f -a "oracle\t'The task\'s reference solution (solution/solve.sh, seen at /solution)'
nop\t'Nothing at all'"
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l environment -d 'Where tasks run: host (the host\'s system in the eval\'s own mount namespace, the workspace at the Dockerfile\'s WORKDIR), podman or docker. Default: host' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l reward-threshold -d 'The reward at or above which a trial passes (0 < X <= 1). Default: 1' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l reward-key -d 'The metric of a reward.json with several that decides. Default: reward' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l resume -d 'Continue the run --run-id names: keep its finished trials, run the rest'
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l rerun-changed -d 'With --resume, rerun the trials of evals that changed instead of refusing'
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l allow-reshape -d 'With --resume, accept a plan with fewer trials than the earlier run (fewer --epochs, agents or evals) instead of refusing; the trials it lacks are left out of run.json'
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l isolate-home -d 'Give the agent and its phases their own HOME and XDG directories and a cleared environment (PATH, locale, TERM, TZ, USER and --pass-env variables are kept)'
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l json -d 'Print the run summary (run.json) on stdout instead of the human summary'
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -l skip-build-steps -d 'Run tasks on the host even when their Dockerfile has steps the host does not perform (RUN, COPY --from, USER, ENTRYPOINT), as if the host already had what they install; report.json lists the steps'
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides'
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -s q -l quiet -d 'Only errors on stderr'
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c hyoka -n "__fish_hyoka_using_subcommand run" -s V -l version -d 'Print version'
complete -c hyoka -n "__fish_hyoka_using_subcommand clean" -l reports -d 'Where the runs\' reports (and ledgers) are' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand clean" -l workspace-root -d 'Where marked workspaces are looked for. Default: the system temp directory' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand clean" -l older-than -d 'With --kept: only kept workspaces made longer ago than this (30m, 7d)' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand clean" -l grace -d 'How long processes get between SIGTERM and SIGKILL' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand clean" -l dry-run -d 'Report what would be done, and change nothing at all'
complete -c hyoka -n "__fish_hyoka_using_subcommand clean" -l kept -d 'Also remove workspaces kept by --keep-workspace (only those provably hyoka\'s whose run is over) of the runs recorded under --reports. Without it they are listed as kept and left alone'
complete -c hyoka -n "__fish_hyoka_using_subcommand clean" -l json -d 'Machine-readable output on stdout'
complete -c hyoka -n "__fish_hyoka_using_subcommand clean" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides'
complete -c hyoka -n "__fish_hyoka_using_subcommand clean" -s q -l quiet -d 'Only errors on stderr'
complete -c hyoka -n "__fish_hyoka_using_subcommand clean" -s h -l help -d 'Print help'
complete -c hyoka -n "__fish_hyoka_using_subcommand clean" -s V -l version -d 'Print version'
complete -c hyoka -n "__fish_hyoka_using_subcommand ps" -l reports -d 'Where the runs\' reports (and ledgers) are' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand ps" -l json -d 'Machine-readable output on stdout'
complete -c hyoka -n "__fish_hyoka_using_subcommand ps" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides'
complete -c hyoka -n "__fish_hyoka_using_subcommand ps" -s q -l quiet -d 'Only errors on stderr'
complete -c hyoka -n "__fish_hyoka_using_subcommand ps" -s h -l help -d 'Print help'
complete -c hyoka -n "__fish_hyoka_using_subcommand ps" -s V -l version -d 'Print version'
complete -c hyoka -n "__fish_hyoka_using_subcommand detect" -l profile -d 'The detector profile: claude-code, codex, gemini, copilot, aider or generic' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand detect" -l profile-file -d 'A profile file (TOML) instead of a built-in one; it may extend a built-in profile' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand detect" -l screen -d 'One screen snapshot (ANSI allowed): prints one verdict' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand detect" -l cast -d 'An asciicast v2 recording, replayed in virtual time: one line per verdict change' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand detect" -l stream -d 'Raw terminal output, fed as fast as possible: prints counts and throughput' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand detect" -l chunk-bytes -d 'The slice size for --stream' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand detect" -l json -d 'Machine-readable output on stdout (one JSON document; one per line for --cast)'
complete -c hyoka -n "__fish_hyoka_using_subcommand detect" -l explain -d 'Explain the verdict: every signal and rule behind it'
complete -c hyoka -n "__fish_hyoka_using_subcommand detect" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides'
complete -c hyoka -n "__fish_hyoka_using_subcommand detect" -s q -l quiet -d 'Only errors on stderr'
complete -c hyoka -n "__fish_hyoka_using_subcommand detect" -s h -l help -d 'Print help'
complete -c hyoka -n "__fish_hyoka_using_subcommand detect" -s V -l version -d 'Print version'
complete -c hyoka -n "__fish_hyoka_using_subcommand demo" -l reports -d 'Where the demo\'s reports are written' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand demo" -l workspace-root -d 'Where the demo\'s workspaces are created. Default: the system temp directory' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand demo" -l json -d 'Print a JSON summary on stdout instead of the story'
complete -c hyoka -n "__fish_hyoka_using_subcommand demo" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides'
complete -c hyoka -n "__fish_hyoka_using_subcommand demo" -s q -l quiet -d 'Only errors on stderr'
complete -c hyoka -n "__fish_hyoka_using_subcommand demo" -s h -l help -d 'Print help'
complete -c hyoka -n "__fish_hyoka_using_subcommand demo" -s V -l version -d 'Print version'
complete -c hyoka -n "__fish_hyoka_using_subcommand doctor" -l json -d 'Machine-readable output on stdout'
complete -c hyoka -n "__fish_hyoka_using_subcommand doctor" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides'
complete -c hyoka -n "__fish_hyoka_using_subcommand doctor" -s q -l quiet -d 'Only errors on stderr'
complete -c hyoka -n "__fish_hyoka_using_subcommand doctor" -s h -l help -d 'Print help'
complete -c hyoka -n "__fish_hyoka_using_subcommand doctor" -s V -l version -d 'Print version'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and not __fish_seen_subcommand_from merge html compare junit markdown help" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and not __fish_seen_subcommand_from merge html compare junit markdown help" -s q -l quiet -d 'Only errors on stderr'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and not __fish_seen_subcommand_from merge html compare junit markdown help" -s h -l help -d 'Print help'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and not __fish_seen_subcommand_from merge html compare junit markdown help" -s V -l version -d 'Print version'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and not __fish_seen_subcommand_from merge html compare junit markdown help" -f -a "merge" -d 'Merge the run.json files of a suite\'s shards into one summary'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and not __fish_seen_subcommand_from merge html compare junit markdown help" -f -a "html" -d 'Write one self-contained, offline HTML page of a run, or of two runs compared'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and not __fish_seen_subcommand_from merge html compare junit markdown help" -f -a "compare" -d 'Compare two runs: per-task pass rates, flipped tasks, totals, a paired sign test'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and not __fish_seen_subcommand_from merge html compare junit markdown help" -f -a "junit" -d 'Write a run as JUnit XML for CI test views: one testcase per trial (failure, error, skipped for not run), with times'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and not __fish_seen_subcommand_from merge html compare junit markdown help" -f -a "markdown" -d 'Write a run\'s Markdown summary for CI step summaries ($GITHUB_STEP_SUMMARY)'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and not __fish_seen_subcommand_from merge html compare junit markdown help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from merge" -s o -l output -d 'Write the merged summary here (atomically) instead of stdout' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from merge" -l run-id -d 'The merged run\'s id. Default: the shards\' run id' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from merge" -l allow-partial -d 'Merge even when shards are missing (run.json lists them in missing_shards)'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from merge" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from merge" -s q -l quiet -d 'Only errors on stderr'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from merge" -s h -l help -d 'Print help'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from merge" -s V -l version -d 'Print version'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from html" -s o -l output -d 'Where the page goes. Default: RUN/report.html (compare.html for two runs)' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from html" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from html" -s q -l quiet -d 'Only errors on stderr'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from html" -s h -l help -d 'Print help'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from html" -s V -l version -d 'Print version'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from compare" -l json -d 'Print the comparison as JSON on stdout'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from compare" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from compare" -s q -l quiet -d 'Only errors on stderr'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from compare" -s h -l help -d 'Print help'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from compare" -s V -l version -d 'Print version'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from junit" -s o -l output -d 'Where it goes (written atomically). Default: stdout' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from junit" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from junit" -s q -l quiet -d 'Only errors on stderr'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from junit" -s h -l help -d 'Print help'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from junit" -s V -l version -d 'Print version'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from markdown" -s o -l output -d 'Where it goes (written atomically). Default: stdout' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from markdown" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from markdown" -s q -l quiet -d 'Only errors on stderr'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from markdown" -s h -l help -d 'Print help'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from markdown" -s V -l version -d 'Print version'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from help" -f -a "merge" -d 'Merge the run.json files of a suite\'s shards into one summary'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from help" -f -a "html" -d 'Write one self-contained, offline HTML page of a run, or of two runs compared'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from help" -f -a "compare" -d 'Compare two runs: per-task pass rates, flipped tasks, totals, a paired sign test'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from help" -f -a "junit" -d 'Write a run as JUnit XML for CI test views: one testcase per trial (failure, error, skipped for not run), with times'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from help" -f -a "markdown" -d 'Write a run\'s Markdown summary for CI step summaries ($GITHUB_STEP_SUMMARY)'
complete -c hyoka -n "__fish_hyoka_using_subcommand report; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l backend -d 'Where the agent runs: pty (the default) or tmux' -r -f -a "pty\t'A pseudo-terminal owned by hyoka (the embedded default)'
tmux\t'A session on a private tmux server: it survives a restart of hyoka and can be re-attached with `--tmux-session`'"
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l name -d 'The session\'s name, for `hyoka sessions`, `wait`, `send` and `--stop` (for tmux also the tmux session\'s name). Default: the run id' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l on-blocked -d 'Run this shell command when the session has been blocked for --blocked-after, once per blocked episode, with HYOKA_SESSION, HYOKA_BLOCKED_KIND and HYOKA_SCREEN_FILE (a file holding the screen\'s text) in its environment' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l blocked-after -d 'How long a session must be blocked before --on-blocked runs' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l on-idle -d 'Run this shell command when the session has been idle for --idle-after, once per idle episode (same environment as --on-blocked)' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l idle-after -d 'How long a session must be idle before --on-idle runs' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l events -d 'Append one JSON line per controller event to FILE' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l reports -d 'Where the session\'s ledger and owner lock go (reports/<run_id>/), so `hyoka clean` repairs a crashed controller. (With the pty backend; a tmux session is meant to outlive hyoka.)' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l max-cycles -d 'Stop the session and exit 0 after N completed cycles' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l max-cycles-per-hour -d 'Start no more than N cycles in any hour' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l update-prompt -d 'The text typed as the first step of a cycle' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l clear-command -d 'The clear step\'s command instead of the profile\'s (sent even where the profile has none)' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l init-command -d 'The init step\'s command instead of the profile\'s (sent even where the profile has none)' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l kickstart -d 'Type TEXT when /init starts no work' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l completion-confirm -d 'Silence that confirms a completion message' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l no-output-timeout -d 'Silence after which idle is considered without a completion message' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l inter-step-delay -d 'Delay before each step is typed' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l auto-accept-delay -d 'Silence before a plan-approval menu is accepted' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l ai-check-command -d 'A shell command that judges IDLE or WORKING from the output on its stdin' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l plan-check-command -d 'A shell command that judges PLAN_MODE or NOT_PLAN_MODE from the output on its stdin' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l check-timeout -d 'How long an AI check may run before it counts as an error' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l profile -d 'The detector profile: claude-code, codex, gemini, copilot, aider or generic' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l human-lock -d 'How long a keystroke from you pauses automation' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l grace -d 'SIGTERM → SIGKILL grace when the session is stopped' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l tmux-session -d 'Run in the tmux session NAME (`--backend tmux --name NAME`); an existing session of that name is re-attached and supervised again' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l stop -d 'Stop the session NAME (`--name` or `--tmux-session`): through its controller, or a detached tmux session that nobody supervises'
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l no-cycle -d 'Supervise without ever cycling or accepting menus on its own: detect, alert, and deliver what `hyoka send` sends'
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l headless -d 'Do not mirror the session to this terminal (and do not read keys from it)'
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l no-clear -d 'Do not send the clear step (the profile\'s: /clear for claude-code, /new for codex)'
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l no-init -d 'Do not send the init step (/init where the agent has one)'
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l no-auto-accept -d 'Never press Enter on a plan-approval menu'
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l dry-run -d 'Decide and log, never type'
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l install-claude-hooks -d 'Write Claude Code hook entries (Stop, UserPromptSubmit, Notification) into ./.claude/settings.local.json before starting'
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -l json -d 'When the session ends, print a JSON summary on stdout (outcome, cycles, exit, teardown). Needs --headless: otherwise stdout is the session\'s screen'
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides'
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -s q -l quiet -d 'Only errors on stderr'
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c hyoka -n "__fish_hyoka_using_subcommand respawn" -s V -l version -d 'Print version'
complete -c hyoka -n "__fish_hyoka_using_subcommand hook" -l dir -d 'With --install-claude-hooks: the project directory (default: the current one)' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand hook" -l socket -d 'The controller\'s socket. Default: $HYOKA_RESPAWN_SOCKET, which `hyoka respawn` sets for its agent' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand hook" -l install-claude-hooks -d 'Write the hook entries into .claude/settings.local.json instead (merged, never clobbered)'
complete -c hyoka -n "__fish_hyoka_using_subcommand hook" -l json -d 'With --install-claude-hooks: report what was written as JSON. (A forwarded hook prints nothing: Claude Code reads a hook\'s stdout.)'
complete -c hyoka -n "__fish_hyoka_using_subcommand hook" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides'
complete -c hyoka -n "__fish_hyoka_using_subcommand hook" -s q -l quiet -d 'Only errors on stderr'
complete -c hyoka -n "__fish_hyoka_using_subcommand hook" -s h -l help -d 'Print help'
complete -c hyoka -n "__fish_hyoka_using_subcommand hook" -s V -l version -d 'Print version'
complete -c hyoka -n "__fish_hyoka_using_subcommand sessions" -l reports -d 'Where the sessions\' controllers keep their records (as `hyoka respawn --reports`): a tmux session whose controller died is listed from them, as orphaned' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand sessions" -l json -d 'Machine-readable output on stdout'
complete -c hyoka -n "__fish_hyoka_using_subcommand sessions" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides'
complete -c hyoka -n "__fish_hyoka_using_subcommand sessions" -s q -l quiet -d 'Only errors on stderr'
complete -c hyoka -n "__fish_hyoka_using_subcommand sessions" -s h -l help -d 'Print help'
complete -c hyoka -n "__fish_hyoka_using_subcommand sessions" -s V -l version -d 'Print version'
complete -c hyoka -n "__fish_hyoka_using_subcommand wait" -l reports -d 'Where the sessions\' controllers keep their records (as `hyoka respawn --reports`): a name with no live controller that is a tmux session whose controller died is said to be orphaned, with the commands that supervise or stop it' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand wait" -l until -d 'The state to wait for: idle, working or blocked' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand wait" -l timeout -d 'Give up after this long (exit 124). Default: wait as long as it takes' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand wait" -l json -d 'Print the session\'s status as JSON on stdout when the wait ends'
complete -c hyoka -n "__fish_hyoka_using_subcommand wait" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides'
complete -c hyoka -n "__fish_hyoka_using_subcommand wait" -s q -l quiet -d 'Only errors on stderr'
complete -c hyoka -n "__fish_hyoka_using_subcommand wait" -s h -l help -d 'Print help'
complete -c hyoka -n "__fish_hyoka_using_subcommand wait" -s V -l version -d 'Print version'
complete -c hyoka -n "__fish_hyoka_using_subcommand send" -l reports -d 'Where the sessions\' controllers keep their records (as `hyoka respawn --reports`): a name with no live controller that is a tmux session whose controller died is said to be orphaned, with the commands that supervise or stop it' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand send" -l queue -d 'Wait until the session is idle and nobody is at it, instead of refusing'
complete -c hyoka -n "__fish_hyoka_using_subcommand send" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides'
complete -c hyoka -n "__fish_hyoka_using_subcommand send" -s q -l quiet -d 'Only errors on stderr'
complete -c hyoka -n "__fish_hyoka_using_subcommand send" -s h -l help -d 'Print help'
complete -c hyoka -n "__fish_hyoka_using_subcommand send" -s V -l version -d 'Print version'
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and not __fish_seen_subcommand_from check help" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides'
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and not __fish_seen_subcommand_from check help" -s q -l quiet -d 'Only errors on stderr'
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and not __fish_seen_subcommand_from check help" -s h -l help -d 'Print help'
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and not __fish_seen_subcommand_from check help" -s V -l version -d 'Print version'
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and not __fish_seen_subcommand_from check help" -f -a "check" -d 'Check Harbor tasks as Harbor does: on every task the oracle must pass and the nop agent must fail. Prints the tasks that do not behave; exit 1 when there is one'
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and not __fish_seen_subcommand_from check help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and __fish_seen_subcommand_from check" -l environment -d 'Where tasks run: host (the host\'s system in the eval\'s own mount namespace, the workspace at the Dockerfile\'s WORKDIR), podman or docker. Default: host' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and __fish_seen_subcommand_from check" -l reward-threshold -d 'The reward at or above which a trial passes (0 < X <= 1). Default: 1' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and __fish_seen_subcommand_from check" -l reward-key -d 'The metric of a reward.json with several that decides. Default: reward' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and __fish_seen_subcommand_from check" -l run-id -d 'The run id of the check\'s run: [A-Za-z0-9][A-Za-z0-9._-]{0,63}. Default: YYYYMMDD-HHMMSS-xxxxxx' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and __fish_seen_subcommand_from check" -l reports -d 'Where the check\'s reports are written (reports/<run_id>/…)' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and __fish_seen_subcommand_from check" -l workspace-root -d 'Where workspaces are created. Default: the system temp directory' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and __fish_seen_subcommand_from check" -l keep-workspace -d 'When to keep the workspaces: never, on-failure or always' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and __fish_seen_subcommand_from check" -l workers -d 'How many trials run at once' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and __fish_seen_subcommand_from check" -l timeout -d 'Stop each agent after this long instead of the task\'s [agent] timeout_sec' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and __fish_seen_subcommand_from check" -l grace -d 'How long processes get between SIGTERM and SIGKILL. Default: 5s' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and __fish_seen_subcommand_from check" -l sandbox-read -d 'Show this path (inside the hidden home, for example tools the verifiers need, such as a Python and uv installed there) read-only to the tasks. Repeatable' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and __fish_seen_subcommand_from check" -l pass-env -d 'Pass this environment variable of the host through to the tasks\' processes (they run with an isolated home and a cleared environment). Repeatable' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and __fish_seen_subcommand_from check" -l skip-build-steps -d 'Run tasks on the host even when their Dockerfile has steps the host does not perform (RUN, COPY --from, USER, ENTRYPOINT), as if the host already had what they install; report.json lists the steps'
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and __fish_seen_subcommand_from check" -l json -d 'Print the check (every task, its oracle\'s and nop agent\'s results) as JSON on stdout'
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and __fish_seen_subcommand_from check" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides'
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and __fish_seen_subcommand_from check" -s q -l quiet -d 'Only errors on stderr'
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and __fish_seen_subcommand_from check" -s h -l help -d 'Print help'
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and __fish_seen_subcommand_from check" -s V -l version -d 'Print version'
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and __fish_seen_subcommand_from help" -f -a "check" -d 'Check Harbor tasks as Harbor does: on every task the oracle must pass and the nop agent must fail. Prints the tasks that do not behave; exit 1 when there is one'
complete -c hyoka -n "__fish_hyoka_using_subcommand tasks; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c hyoka -n "__fish_hyoka_using_subcommand model-stub; and not __fish_seen_subcommand_from serve help" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides'
complete -c hyoka -n "__fish_hyoka_using_subcommand model-stub; and not __fish_seen_subcommand_from serve help" -s q -l quiet -d 'Only errors on stderr'
complete -c hyoka -n "__fish_hyoka_using_subcommand model-stub; and not __fish_seen_subcommand_from serve help" -s h -l help -d 'Print help'
complete -c hyoka -n "__fish_hyoka_using_subcommand model-stub; and not __fish_seen_subcommand_from serve help" -s V -l version -d 'Print version'
complete -c hyoka -n "__fish_hyoka_using_subcommand model-stub; and not __fish_seen_subcommand_from serve help" -f -a "serve" -d 'Serve a script over the agents\' wire protocols (Anthropic Messages, OpenAI Responses and Chat Completions, Gemini generateContent); prints the base URL on stdout'
complete -c hyoka -n "__fish_hyoka_using_subcommand model-stub; and not __fish_seen_subcommand_from serve help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c hyoka -n "__fish_hyoka_using_subcommand model-stub; and __fish_seen_subcommand_from serve" -l script -d 'The YAML script: each reply\'s text, tool calls, usage, pace, stalls and errors' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand model-stub; and __fish_seen_subcommand_from serve" -l listen -d 'The address to listen on (port 0 picks a free port)' -r
complete -c hyoka -n "__fish_hyoka_using_subcommand model-stub; and __fish_seen_subcommand_from serve" -l log -d 'Also write every request\'s log entry to FILE, one JSON line each' -r -F
complete -c hyoka -n "__fish_hyoka_using_subcommand model-stub; and __fish_seen_subcommand_from serve" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides'
complete -c hyoka -n "__fish_hyoka_using_subcommand model-stub; and __fish_seen_subcommand_from serve" -s q -l quiet -d 'Only errors on stderr'
complete -c hyoka -n "__fish_hyoka_using_subcommand model-stub; and __fish_seen_subcommand_from serve" -s h -l help -d 'Print help'
complete -c hyoka -n "__fish_hyoka_using_subcommand model-stub; and __fish_seen_subcommand_from serve" -s V -l version -d 'Print version'
complete -c hyoka -n "__fish_hyoka_using_subcommand model-stub; and __fish_seen_subcommand_from help" -f -a "serve" -d 'Serve a script over the agents\' wire protocols (Anthropic Messages, OpenAI Responses and Chat Completions, Gemini generateContent); prints the base URL on stdout'
complete -c hyoka -n "__fish_hyoka_using_subcommand model-stub; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c hyoka -n "__fish_hyoka_using_subcommand help; and not __fish_seen_subcommand_from run clean ps detect demo doctor report respawn hook sessions wait send tasks model-stub help" -f -a "run" -d 'Run an agent command (or a suite of evals) in isolated workspaces and report'
complete -c hyoka -n "__fish_hyoka_using_subcommand help; and not __fish_seen_subcommand_from run clean ps detect demo doctor report respawn hook sessions wait send tasks model-stub help" -f -a "clean" -d 'Stop what abandoned runs left behind (processes, cgroups, workspaces)'
complete -c hyoka -n "__fish_hyoka_using_subcommand help; and not __fish_seen_subcommand_from run clean ps detect demo doctor report respawn hook sessions wait send tasks model-stub help" -f -a "ps" -d 'List live runs, their evals, workspaces and processes'
complete -c hyoka -n "__fish_hyoka_using_subcommand help; and not __fish_seen_subcommand_from run clean ps detect demo doctor report respawn hook sessions wait send tasks model-stub help" -f -a "detect" -d 'Judge a recorded agent session: working, idle or blocked, with the evidence'
complete -c hyoka -n "__fish_hyoka_using_subcommand help; and not __fish_seen_subcommand_from run clean ps detect demo doctor report respawn hook sessions wait send tasks model-stub help" -f -a "demo" -d 'Show what hyoka does, end to end, against the built-in simulated agent'
complete -c hyoka -n "__fish_hyoka_using_subcommand help; and not __fish_seen_subcommand_from run clean ps detect demo doctor report respawn hook sessions wait send tasks model-stub help" -f -a "doctor" -d 'Show which containment layers this machine gives and what falls back to what'
complete -c hyoka -n "__fish_hyoka_using_subcommand help; and not __fish_seen_subcommand_from run clean ps detect demo doctor report respawn hook sessions wait send tasks model-stub help" -f -a "report" -d 'Work with run reports'
complete -c hyoka -n "__fish_hyoka_using_subcommand help; and not __fish_seen_subcommand_from run clean ps detect demo doctor report respawn hook sessions wait send tasks model-stub help" -f -a "respawn" -d 'Run an interactive agent under the respawn controller: cycle it when it is idle'
complete -c hyoka -n "__fish_hyoka_using_subcommand help; and not __fish_seen_subcommand_from run clean ps detect demo doctor report respawn hook sessions wait send tasks model-stub help" -f -a "hook" -d 'Forward a Claude Code hook (payload on stdin) to the running respawn controller'
complete -c hyoka -n "__fish_hyoka_using_subcommand help; and not __fish_seen_subcommand_from run clean ps detect demo doctor report respawn hook sessions wait send tasks model-stub help" -f -a "sessions" -d 'List the supervised sessions: name, agent, state with its evidence, cycles'
complete -c hyoka -n "__fish_hyoka_using_subcommand help; and not __fish_seen_subcommand_from run clean ps detect demo doctor report respawn hook sessions wait send tasks model-stub help" -f -a "wait" -d 'Wait until a supervised session is idle, working or blocked (exit 124 on timeout)'
complete -c hyoka -n "__fish_hyoka_using_subcommand help; and not __fish_seen_subcommand_from run clean ps detect demo doctor report respawn hook sessions wait send tasks model-stub help" -f -a "send" -d 'Type text into a supervised session, verified: exit 0 delivered, 3 refused (nothing typed), 4 typed but not confirmed'
complete -c hyoka -n "__fish_hyoka_using_subcommand help; and not __fish_seen_subcommand_from run clean ps detect demo doctor report respawn hook sessions wait send tasks model-stub help" -f -a "tasks" -d 'Work with Harbor task folders (Terminal-Bench 2 and the datasets built on its format)'
complete -c hyoka -n "__fish_hyoka_using_subcommand help; and not __fish_seen_subcommand_from run clean ps detect demo doctor report respawn hook sessions wait send tasks model-stub help" -f -a "model-stub" -d 'A scripted model server for running real agents offline'
complete -c hyoka -n "__fish_hyoka_using_subcommand help; and not __fish_seen_subcommand_from run clean ps detect demo doctor report respawn hook sessions wait send tasks model-stub help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c hyoka -n "__fish_hyoka_using_subcommand help; and __fish_seen_subcommand_from report" -f -a "merge" -d 'Merge the run.json files of a suite\'s shards into one summary'
complete -c hyoka -n "__fish_hyoka_using_subcommand help; and __fish_seen_subcommand_from report" -f -a "html" -d 'Write one self-contained, offline HTML page of a run, or of two runs compared'
complete -c hyoka -n "__fish_hyoka_using_subcommand help; and __fish_seen_subcommand_from report" -f -a "compare" -d 'Compare two runs: per-task pass rates, flipped tasks, totals, a paired sign test'
complete -c hyoka -n "__fish_hyoka_using_subcommand help; and __fish_seen_subcommand_from report" -f -a "junit" -d 'Write a run as JUnit XML for CI test views: one testcase per trial (failure, error, skipped for not run), with times'
complete -c hyoka -n "__fish_hyoka_using_subcommand help; and __fish_seen_subcommand_from report" -f -a "markdown" -d 'Write a run\'s Markdown summary for CI step summaries ($GITHUB_STEP_SUMMARY)'
complete -c hyoka -n "__fish_hyoka_using_subcommand help; and __fish_seen_subcommand_from tasks" -f -a "check" -d 'Check Harbor tasks as Harbor does: on every task the oracle must pass and the nop agent must fail. Prints the tasks that do not behave; exit 1 when there is one'
complete -c hyoka -n "__fish_hyoka_using_subcommand help; and __fish_seen_subcommand_from model-stub" -f -a "serve" -d 'Serve a script over the agents\' wire protocols (Anthropic Messages, OpenAI Responses and Chat Completions, Gemini generateContent); prints the base URL on stdout'
