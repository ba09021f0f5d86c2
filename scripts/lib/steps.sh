# steps.sh - quiet progress for the user-facing scripts (sourced, not run).
#
# A script calls `steps_init NAME` once, then `step "what it does" COMMAND...` per step.
# Quiet (the default): one line per step, "NAME: what it does ... ok (12 s)"; the
# command's output goes to $STEPS_LOG ($WORK/logs/NAME.log, begun afresh per run), and
# when a step fails its last lines and the log's path are printed. STEPS_VERBOSE=1 (the
# scripts' -v) shows all output as it comes, and still labels each step.
# Needs WORK set (the scripts default it to .toolchain).

steps_init() {  # steps_init NAME
  STEPS_NAME=$1
  STEPS_VERBOSE=${STEPS_VERBOSE:-0}
  mkdir -p "$WORK/logs"
  STEPS_LOG=$WORK/logs/$1.log
  : > "$STEPS_LOG"
}

# step WHAT COMMAND...: runs COMMAND as one step; returns its exit status.
step() {
  local what=$1 t0 rc mark; shift
  t0=$(date +%s)
  mark=$(wc -l < "$STEPS_LOG")
  printf '=== %s: %s\n' "$STEPS_NAME" "$what" >> "$STEPS_LOG"
  if [ "$STEPS_VERBOSE" = 1 ]; then
    echo "$STEPS_NAME: $what ..."
    "$@" 2>&1 | tee -a "$STEPS_LOG"; rc=${PIPESTATUS[0]}
  else
    printf '%s: %s ... ' "$STEPS_NAME" "$what"
    "$@" >> "$STEPS_LOG" 2>&1 < /dev/null; rc=$?
  fi
  local took=$(( $(date +%s) - t0 ))
  if [ "$rc" = 0 ]; then
    [ "$STEPS_VERBOSE" = 1 ] && printf '%s: %s: ' "$STEPS_NAME" "$what"
    echo "ok ($took s)"
  else
    [ "$STEPS_VERBOSE" = 1 ] && printf '%s: %s: ' "$STEPS_NAME" "$what"
    echo "FAILED (exit status $rc, after $took s)"
    if [ "$STEPS_VERBOSE" != 1 ]; then
      echo "--- last lines of its output:"
      tail -n +"$((mark + 2))" "$STEPS_LOG" | tail -15 | sed 's/^/    /'
    fi
    echo "--- full output: $STEPS_LOG"
  fi
  return "$rc"
}
