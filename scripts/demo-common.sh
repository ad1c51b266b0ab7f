# Shared by scripts/demo and scripts/demo-cluster (sourced, not run): set-up, a scratch
# directory for the steps, bringing up only the stack components a demo needs (the stack's
# progress lines go to the terminal), running steps with a heading and the elapsed time, and
# stopping at the end exactly the components this demo started, so a stack someone else runs
# (a test session, a second demo) is left as it was.
# shellcheck shell=bash

demo_started=$SECONDS
demo_was_up=""   # healthy before the demo began
demo_wanted=""   # what the demo's `stack up` asked for, groups and dependencies expanded

demo_say() {
  printf '[demo %4ds] %s\n' "$((SECONDS - demo_started))" "$*"
}

# Names of the components `stack status` reports healthy, comma-separated.
demo_healthy() {
  { chainloom-dev stack status --json 2>/dev/null || true; } |
    python -c 'import json, sys; text = sys.stdin.read().strip(); print(",".join(r["name"] for r in (json.loads(text) if text else []) if r["healthy"]))'
}

demo_cleanup() {
  # Background processes of the steps are in the demo's process group; end them first.
  jobs -p | xargs -r kill 2>/dev/null || true
  local started
  started=$(python -c 'import sys; before = set(sys.argv[1].split(",")); print(",".join(n for n in sys.argv[2].split(",") if n and n not in before))' "$demo_was_up" "$demo_wanted")
  if [ -n "$started" ]; then
    demo_say "stopping what this demo started: $started"
    chainloom-dev stack down --only "$started" >/dev/null 2>&1 || true
  fi
  rm -rf "$CHAINLOOM_DEMO_DIR"
}

# demo_setup: .venv, PATH, the scratch directory and the clean-up at exit.
demo_setup() {
  demo_say "set-up: scripts/setup (.venv with chainloom and the dev kit; a few minutes the first time)"
  scripts/setup
  export PATH="$PWD/.venv/bin:$PATH"
  export PYSPARK_PYTHON="$PWD/.venv/bin/python"
  CHAINLOOM_DEMO_DIR=$(mktemp -d -t chainloom-demo.XXXXXX)
  export CHAINLOOM_DEMO_DIR
  demo_was_up=$(demo_healthy)
  trap demo_cleanup EXIT
}

# demo_stack_up ARGS...: `chainloom-dev stack up ARGS`, its progress lines on the terminal.
demo_stack_up() {
  demo_wanted=$(python - "$@" <<'PY'
import sys
from chainloom_dev.stack.manager import DEFAULT, resolve
args = sys.argv[1:]
names = args[args.index("--only") + 1].split(",") if "--only" in args else DEFAULT
flags = {flag: f"--{flag}" in args for flag in ("full", "node", "evm")}
print(",".join(resolve(names, **flags)))
PY
)
  demo_say "stack: chainloom-dev stack up $* (only the first run builds; cached under ~/.cache/chainloom)"
  chainloom-dev stack up "$@"
  chainloom-dev stack status
  eval "$(chainloom-dev stack env)"
}

# demo_steps FILE...: run each step with a heading and its time.
demo_steps() {
  local step began
  for step in "$@"; do
    began=$SECONDS
    echo
    demo_say "================ $(basename "$step" .sh)"
    bash "$step"
    demo_say "$(basename "$step" .sh): $((SECONDS - began)) s"
  done
}
