#!/usr/bin/env bash
# Re-makes every <name>.log in this folder from the scripts in scripts/.
#
#   /usr/bin/python3 -m venv /opt/venv && /opt/venv/bin/pip install torch==2.13.0 numpy
#   bash bench/real_logs/runs/make_runs.sh            # all runs
#   bash bench/real_logs/runs/make_runs.sh rank_sigkill healthy_warnings   # some
#
# The runs use a neutral layout, so the logs show no path of the machine that made them:
# scripts/ is copied to /workspace/scripts, every run starts in /workspace, torch lives in the
# virtualenv /opt/venv (TORCHRUN and PY can be overridden), and the scripts' data and temp
# files go to /workspace/data (TMPDIR). The paths in the logs are those of the run: /workspace,
# /opt/venv and the system Python's /usr/lib/python3.11 (the venv is made from /usr/bin/python3,
# not from a pyenv or other Python under a home folder, whose stdlib paths would show).
#
# Every run is `torchrun --nproc_per_node N --tee 3 --master_port P scripts/X.py ARGS` on CPU
# with the gloo backend, from /workspace; stdout and stderr go, combined and unedited, to
# <name>.log in this folder.
# After each run scripts/check_log.py checks that the log shows what <name>.yaml describes
# (exit status, the rank torchrun names as root cause, the key lines); a few runs involve a
# race or a flaky crash in torch itself, so a run is repeated (up to TRIES times) until it does.
# torch is not a dependency of rootcause; it is only used here.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TORCHRUN=${TORCHRUN:-/opt/venv/bin/torchrun}
PY=${PY:-/opt/venv/bin/python}
WORKSPACE=/workspace
mkdir -p "$WORKSPACE/data"
rm -rf "$WORKSPACE/scripts"
cp -r "$HERE/scripts" "$WORKSPACE/scripts"
cd "$WORKSPACE"
export TMPDIR=$WORKSPACE/data
# a clean baseline: only the runs that set these get them
unset OMP_NUM_THREADS TORCH_DISTRIBUTED_DEBUG TORCH_CPP_LOG_LEVEL TORCH_SHOW_CPP_STACKTRACES
unset PYTHONFAULTHANDLER TORCHELASTIC_ERROR_FILE
export PYTHONWARNINGS=
# torchrun's own stdout (where it copies the workers' stdout lines) unbuffered, as in the
# environment the logs were made in; without it those lines reach the log in late blocks
export PYTHONUNBUFFERED=1
ONLY=("$@")
FAILED=()

want() {
  [ ${#ONLY[@]} -eq 0 ] && return 0
  local n; for n in "${ONLY[@]}"; do [ "$n" = "$1" ] && return 0; done
  return 1
}

# shows NAME RC "CHECK-ARGS" TRY: does NAME.log show what NAME.yaml describes (scripts/check_log.py)?
shows() {
  local name=$1 rc=$2 check=$3 i=$4
  # shellcheck disable=SC2086
  if eval "$PY scripts/check_log.py \"\$HERE/$name.log\" --rc $rc $check"; then
    echo "ok    $name (rc=$rc, try $i)"
    return 0
  fi
  echo "retry $name (rc=$rc, try $i)"
  return 1
}

# failed NAME: every try of NAME failed its check
failed() {
  echo "FAIL  $1: the log does not show what $1.yaml describes" >&2
  FAILED+=("$1")
}

# run NAME NPROC PORT TRIES "CHECK-ARGS" [VAR=VALUE ...] -- SCRIPT [ARGS ...]
run() {
  local name=$1 nproc=$2 port=$3 tries=$4 check=$5; shift 5
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  want "$name" || return 0
  local i rc
  for ((i = 1; i <= tries; i++)); do
    env "${envs[@]}" timeout 120 "$TORCHRUN" --nproc_per_node "$nproc" --tee 3 \
      --master_port "$port" "$@" > "$HERE/$name.log" 2>&1
    rc=$?
    shows "$name" "$rc" "$check" "$i" && return 0
  done
  failed "$name"
}

# ---- failing runs: the script decides which rank fails first (--fail-rank) ----------------
run rank_indexerror 3 29611 2 "--root-rank 1 --has 'IndexError: list index out of range'" \
  -- scripts/rank_indexerror.py --fail-rank 1
run rank_keyerror_config 4 29612 2 "--root-rank 2 --has \"KeyError: 'micro_batch'\"" \
  -- scripts/rank_keyerror_config.py --fail-rank 2
run rank_valueerror 2 29613 2 "--root-rank 1 --has 'ValueError: found 1 labels outside'" \
  -- scripts/rank_valueerror.py --fail-rank 1
run rank_assertion 4 29614 2 "--root-rank 3 --has 'AssertionError: expected micro-batch of 4'" \
  -- scripts/rank_assertion.py --fail-rank 3
run rank_zerodivision 3 29615 2 "--root-rank 2 --has 'ZeroDivisionError: float division by zero'" \
  -- scripts/rank_zerodivision.py --fail-rank 2
run rank_filenotfound 4 29616 2 "--root-rank 1 --has 'FileNotFoundError: [Errno 2]'" \
  -- scripts/rank_filenotfound.py --fail-rank 1
run rank_matmul_shape 3 29617 2 "--root-rank 0 --has 'mat1 and mat2 shapes cannot be multiplied'" \
  -- scripts/rank_matmul_shape.py --fail-rank 0
run rank_sigkill 3 29618 2 "--root-rank 1 --has 'Signal 9 (SIGKILL)'" \
  -- scripts/rank_sigkill.py --fail-rank 1
run dataloader_worker_killed 2 29619 2 "--root-rank 1 --has 'is killed by signal: Killed.'" \
  -- scripts/dataloader_worker_killed.py --fail-rank 1
run state_dict_module_prefix 3 29620 2 "--root-rank 0 --has 'Unexpected key(s) in state_dict: \"module.'" \
  -- scripts/state_dict_module_prefix.py --fail-rank 0
run state_dict_orig_mod_prefix 4 29621 2 "--root-rank 2 --has 'Unexpected key(s) in state_dict: \"_orig_mod.'" \
  -- scripts/state_dict_orig_mod_prefix.py --fail-rank 2
run ddp_unused_parameters 3 29622 2 "--root-rank 0 --has 'Expected to have finished reduction in the prior iteration'" \
  -- scripts/ddp_unused_parameters.py --fail-rank 0
run mismatched_collectives 3 29623 2 "--has 'Rank 2 is running collective: CollectiveFingerPrint(SequenceNumber=2, OpType=ALLGATHER'" \
  TORCH_DISTRIBUTED_DEBUG=DETAIL -- scripts/mismatched_collectives.py --fail-rank 2
run anomaly_nan 4 29624 2 "--root-rank 3 --has \"Function 'SqrtBackward0' returned nan values in its 0th output\"" \
  -- scripts/anomaly_nan.py --fail-rank 3
run not_initialized 3 29625 2 "--root-rank 1 --has 'Default process group has not been initialized'" \
  -- scripts/not_initialized.py --fail-rank 1
run rank_sys_exit 4 29626 2 "--root-rank 2 --has 'exitcode  : 3 '" \
  -- scripts/rank_sys_exit.py --fail-rank 2
run nonfinite_grad_norm 3 29627 2 "--root-rank 2 --has 'is non-finite, so it cannot be clipped'" \
  -- scripts/nonfinite_grad_norm.py --fail-rank 2
run gradscaler_unscale_twice 2 29628 4 "--root-rank 1 --has 'unscale_() has already been called' --lacks 'terminate called'" \
  -- scripts/gradscaler_unscale_twice.py --fail-rank 1
run thread_exception_timeout 3 29629 2 "--root-rank-not 1 --has 'JSONDecodeError' --has 'Timed out waiting 10000ms'" \
  -- scripts/thread_exception_timeout.py --fail-rank 1 --timeout 10
run hang_barrier_timeout 4 29630 2 "--root-rank-not 0 --has 'Timed out waiting 10000ms'" \
  -- scripts/hang_barrier_timeout.py --fail-rank 0 --timeout 10
run late_cause_after_timeout 3 29631 3 "--root-rank 1 --before 'Timed out waiting 8000ms' 'TimeoutError: shard 00001'" \
  -- scripts/late_cause_after_timeout.py --fail-rank 1 --timeout 8 --cleanup 5
run eval_late_error 3 29644 3 "--root-rank 0 --before 'Timed out waiting 6000ms' 'TypeError: unsupported format string'" \
  -- scripts/eval_late_error.py --fail-rank 0 --timeout 6 --eval-seconds 9 --cleanup 5
run root_cause_misnamed 4 29632 3 "--root-rank-not 2 --has 'retrying (3/3)' --lacks 'TimeoutError: shard'" \
  -- scripts/late_cause_after_timeout.py --fail-rank 2 --timeout 8 --cleanup 0
run warnings_then_sigkill 4 29633 2 "--root-rank 3 --has 'Signal 9 (SIGKILL)' --has 'find_unused_parameters=True was specified'" \
  -- scripts/warnings_then_failure.py --fail-rank 3 --mode sigkill
run warnings_then_indexerror 2 29634 2 "--root-rank 1 --has 'IndexError: list index out of range' --has 'DeprecationWarning'" \
  -- scripts/warnings_then_failure.py --fail-rank 1 --mode indexerror
run custom_exception_crash_report 4 29635 2 "--root-rank 2 --has 'CorruptBatchError: invalid checksum'" \
  -- scripts/custom_exception_crash_report.py --fail-rank 2
# the survivor aborts in teardown (a flaky crash of torch 2.13 CPU) and exits before the
# failing rank, so torchrun names the survivor; repeated until that happens
run survivor_sigabrt 2 29636 30 "--root-rank 0 --has 'terminate called without an active exception' --has 'IndexError: list index out of range'" \
  -- scripts/rank_indexerror.py --fail-rank 1

run buffered_log_sigterm 2 29645 3 "--root-rank 0 --has 'ValueError: tokenizer returned 0 tokens' --before 'RuntimeError: checkpoint shard 0' 'ValueError: tokenizer returned'" \
  -- scripts/buffered_log_sigterm.py --fail-rank 1 --other-rank 0 --fail-step 2

# ---- failing runs where no rank is singled out by the script ----------------------------
# port already in use: a first job holds the port, a second torchrun is started on it
if want port_in_use; then
  "$TORCHRUN" --nproc_per_node 2 --tee 3 --master_port 29637 scripts/sleeper.py --seconds 20 \
    > "$WORKSPACE/data/port-holder.log" 2>&1 &
  holder=$!
  for _ in $(seq 60); do grep -q "holding the rendezvous port" "$WORKSPACE/data/port-holder.log" && break; sleep 0.5; done
  run port_in_use 2 29637 1 "--has 'EADDRINUSE'" -- scripts/rank_valueerror.py --fail-rank 1
  wait "$holder"
fi
run detail_debug_segfault 3 29638 2 "--has 'SIGSEGV'" \
  TORCH_DISTRIBUTED_DEBUG=DETAIL -- scripts/healthy_ddp.py
run teardown_abort 3 29639 30 "--has 'terminate called without an active exception' --has 'SIGABRT' --has 'done, rank sum 3'" \
  TORCH_DISTRIBUTED_DEBUG=INFO TORCH_CPP_LOG_LEVEL=INFO -- scripts/healthy_ddp.py

# ---- healthy runs with benign, scary-looking output ------------------------------------
run healthy_find_unused 2 29640 3 "--exit zero --has 'find_unused_parameters=True was specified'" \
  -- scripts/healthy_ddp.py --extras unused
run healthy_debug_info 3 29641 6 "--exit zero --has 'DDP Initialized with'" \
  TORCH_DISTRIBUTED_DEBUG=INFO TORCH_CPP_LOG_LEVEL=INFO -- scripts/healthy_ddp.py --extras unused
run healthy_warnings 4 29642 3 "--exit zero --has 'suggested max number of worker' --lacks 'OMP_NUM_THREADS'" \
  OMP_NUM_THREADS=1 -- scripts/healthy_ddp.py --extras warnings
run healthy_handled_errors 2 29643 3 "--exit zero --has 'loss is nan, skipping batch' --has 'FileNotFoundError'" \
  -- scripts/healthy_ddp.py --extras handled

# ---- more runs (2026-12-07): silent deaths, mismatched collectives, elastic restarts, ... ----
# the failing rank leaves without a traceback; the others are left in a collective
run silent_exit_zero 3 29646 2 "--root-rank-not 1 --has 'Connection closed by peer' --lacks 'rank      : 1 (local_rank: 1)'" \
  -- scripts/silent_death.py --fail-rank 1 --mode exit0 --timeout 5
run silent_exit_one 4 29647 3 "--root-rank 3 --has 'exitcode  : 1 (pid' --lacks '[default3]:[rank3]: Traceback'" \
  -- scripts/silent_death.py --fail-rank 3 --mode exit1 --fail-step 3 --timeout 5
run segfault_ctypes 3 29648 2 "--root-rank 1 --has 'Signal 11 (SIGSEGV)'" \
  -- scripts/silent_death.py --fail-rank 1 --mode segv --timeout 5
run segfault_faulthandler 4 29649 2 "--root-rank 2 --has 'Fatal Python error: Segmentation fault' --has 'Signal 11 (SIGSEGV)'" \
  PYTHONFAULTHANDLER=1 -- scripts/silent_death.py --fail-rank 2 --mode segv --fail-step 3 --timeout 5
# (2026-12-07, later) a rank in the middle of four leaves with status 0: it appears in no
# error line and in no line of torchrun's report, only in its own progress lines
run silent_exit_zero_four 4 29676 2 "--root-rank-not 2 --lacks 'rank      : 2 (local_rank: 2)' --lacks '[rank2]: Traceback'" \
  -- scripts/silent_death.py --fail-rank 2 --mode exit0 --timeout 5
run sigstop_timeout 3 29650 2 "--root-rank-not 2 --has 'Timed out waiting 5000ms' --has 'Unable to shutdown process' --has 'exitcode  : -9'" \
  -- scripts/silent_death.py --fail-rank 2 --mode stop --timeout 5
run uneven_shard_barrier 3 29651 2 "--root-rank-not 2 --has 'epoch finished after 2 batches' --has 'Timed out waiting 5000ms'" \
  -- scripts/uneven_shard_exit.py --fail-rank 2 --fail-step 2 --after barrier --timeout 5

# mismatched collectives: without the debug wrapper (timeouts, a gloo abort), and with
# TORCH_DISTRIBUTED_DEBUG=DETAIL and @record (torchrun's report carries the exception)
run mismatch_shape_timeout 3 29652 3 "--root-rank-not 1 --has 'Timed out waiting 5000ms' --lacks 'Detected mismatch'" \
  -- scripts/metrics_mismatch.py --fail-rank 1 --kind shape --timeout 5
run mismatch_dtype_abort 3 29653 6 "--root-rank-not 1 --has \"Received data size doesn't match expected size\" --has 'terminate called after throwing'" \
  -- scripts/metrics_mismatch.py --fail-rank 1 --kind dtype --timeout 5
run mismatch_op_timeout 4 29654 3 "--root-rank-not 2 --has 'Timed out waiting 5000ms' --lacks 'Detected mismatch'" \
  -- scripts/metrics_mismatch.py --fail-rank 2 --kind op --timeout 5
run mismatch_shape_detail_record 3 29655 3 "--has 'TensorShape=[4]' --has 'error_file: /workspace/data/torchelastic_' --has 'no error file defined for parent'" \
  TORCH_DISTRIBUTED_DEBUG=DETAIL -- scripts/metrics_mismatch.py --fail-rank 1 --kind shape --record --timeout 5
run mismatch_dtype_detail_error_file 4 29656 3 "--has 'TensorDtypes=Double' --has 'Tensor Tensor dtypes: Doublevs Float' --lacks 'no error file defined for parent'" \
  TORCH_DISTRIBUTED_DEBUG=DETAIL TORCHELASTIC_ERROR_FILE=/workspace/data/torchrun-error.json \
  -- scripts/metrics_mismatch.py --fail-rank 3 --kind dtype --record --timeout 5
# (2026-12-07, later) the same op on every rank, a tensor of another shape on one: every rank's
# DETAIL report names its own and one other rank's fingerprint; only the shape differs
run mismatch_shape_detail_four 4 29677 3 "--has 'TensorShape=[4]' --has 'Detected mismatch between collectives on ranks'" \
  TORCH_DISTRIBUTED_DEBUG=DETAIL -- scripts/metrics_mismatch.py --fail-rank 2 --kind shape --timeout 5
# (2026-12-07, later) every rank times out, one in another collective than all the others: a rank
# that broadcasts where three all_reduce; a rank whose shard ends two batches early and waits in
# the epoch-end barrier while three all_reduce
run mismatch_op_broadcast_four 4 29678 3 "--has 'Timed out waiting 5000ms' --lacks 'Detected mismatch'" \
  -- scripts/metrics_mismatch.py --fail-rank 3 --kind op --timeout 5
run uneven_shard_barrier_four 4 29679 3 "--has 'epoch finished after 2 batches' --has 'Timed out waiting 5000ms'" \
  -- scripts/uneven_shard_exit.py --fail-rank 1 --fail-step 2 --after barrier --timeout 5
# (2026-12-07, later) the failing rank's own error reads like a peer's: its data server resets the
# connection ("ConnectionResetError: [Errno 104] Connection reset by peer") while the others wait in
# all_reduce and then fail with gloo's own peer errors
run data_server_reset 3 29680 3 "--root-rank 1 --has 'ConnectionResetError: [Errno 104] Connection reset by peer' --has 'Connection closed by peer'" \
  -- scripts/data_server_reset.py --fail-rank 1 --timeout 5

# elastic restarts (--max-restarts 2): the failure repeats in every attempt, happens only in
# the first one, or (static rendezvous) the restarted workers cannot form the gloo group.
# With torch 2.13 the workers' process group is set up through the agent's TCPStore, which
# outlives an attempt: a restarted rank can read a peer's gloo address from the attempt before
# ("Gloo connectFullMesh failed ... Connection refused"), as elastic_static_restart_mesh shows.
# The c10d-rendezvous runs set TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1, so that each attempt gets
# a fresh store (hosted by rank 0) and the restarts themselves work.
run elastic_restart_corrupt_checkpoint 3 29657 2 "--root-rank 1 --has 'failed finding central directory' --has 'attempt 2: resuming' --lacks 'connectFullMesh'" \
  TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 -- --max-restarts 2 --rdzv-backend c10d --rdzv-endpoint localhost:29757 \
  scripts/checkpoint_resume.py --fail-rank 1 --mode corrupt --timeout 5
run elastic_first_attempt_alloc 3 29658 2 "--exit zero --has \"DefaultCPUAllocator: can't allocate memory\" --has 'attempt 1: starting' --has 'rank 2: training finished'" \
  TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 -- --max-restarts 2 --rdzv-backend c10d --rdzv-endpoint localhost:29758 \
  scripts/elastic_first_attempt.py --fail-rank 2 --timeout 5
run elastic_static_restart_mesh 3 29659 3 "--has \"DefaultCPUAllocator: can't allocate memory\" --has 'Gloo connectFullMesh failed'" \
  -- --max-restarts 2 scripts/elastic_first_attempt.py --fail-rank 2 --timeout 5

# a DataLoader worker of one rank fails; checkpoint save and load fail on one rank
run dataloader_getitem_keyerror 3 29660 2 "--root-rank 2 --has 'Caught KeyError in DataLoader worker process' --has \"KeyError: 'label'\"" \
  -- scripts/dataloader_worker_error.py --fail-rank 2 --mode keyerror --timeout 5
run dataloader_worker_segfault 2 29661 3 "--root-rank 1 --has 'is killed by signal: Segmentation fault.'" \
  -- scripts/dataloader_worker_error.py --fail-rank 1 --mode segv --timeout 5
run checkpoint_optimizer_groups 3 29662 2 "--root-rank 0 --has \"doesn't match the size of optimizer's group\"" \
  -- scripts/checkpoint_resume.py --fail-rank 0 --mode optim --timeout 5
run checkpoint_save_missing_dir 4 29663 2 "--root-rank 2 --has 'rootcause-runs-ckpt-never-created/step2 does not exist.'" \
  -- scripts/checkpoint_resume.py --fail-rank 2 --mode save_nodir --timeout 5

# late and near-simultaneous failures, a cause printed after its consequences
run rank3_late_inplace 4 29664 2 "--root-rank 3 --has 'modified by an inplace operation' --has 'rank 0: step 5 loss'" \
  -- scripts/rank_late_inplace.py --fail-rank 3 --fail-step 6 --steps 9 --timeout 5
run two_ranks_near_simultaneous 4 29665 3 "--has 'is non-finite, so it cannot be clipped' --has 'IndexError: list index out of range' --has 'rank 2: step 2 failed' --has 'rank 0: step 2 failed'" \
  -- scripts/two_failures.py --fail-rank 2 --other-rank 0 --fail-step 2 --delay 0.3 --timeout 5
run buffered_stdout_timeout 3 29666 3 "--root-rank-not 1 --before 'Timed out waiting 5000ms' 'ERROR rank 1: step 2 failed' --has 'modified by an inplace operation'" \
  -- scripts/buffered_stdout_timeout.py --fail-rank 1 --timeout 5

# the torchrun agent itself gets a signal from outside (a scheduler's SIGTERM, a Ctrl-C)
# run_signalled NAME NPROC PORT TRIES SIGNAL "CHECK-ARGS" -- SCRIPT [ARGS ...]
run_signalled() {
  local name=$1 nproc=$2 port=$3 tries=$4 sig=$5 check=$6; shift 7
  want "$name" || return 0
  local i rc pid
  for ((i = 1; i <= tries; i++)); do
    "$TORCHRUN" --nproc_per_node "$nproc" --tee 3 --master_port "$port" "$@" > "$HERE/$name.log" 2>&1 &
    pid=$!
    for _ in $(seq 120); do grep -q "step 3 loss" "$HERE/$name.log" && break; sleep 0.5; done
    kill -s "$sig" "$pid"
    ( sleep 60; kill -9 "$pid" 2>/dev/null ) & local guard=$!
    wait "$pid"; rc=$?
    kill "$guard" 2>/dev/null; wait "$guard" 2>/dev/null
    shows "$name" "$rc" "$check" "$i" && return 0
  done
  failed "$name"
}
run_signalled agent_sigterm 2 29667 2 TERM "--has 'Received 15 death signal, shutting down workers' --has 'got signal: 15'" \
  -- scripts/slow_train.py --steps 40
run_signalled agent_sigint 3 29668 2 INT "--has 'Received 2 death signal, shutting down workers' --has 'KeyboardInterrupt'" \
  -- scripts/slow_train.py --steps 40

# healthy: TORCH_DISTRIBUTED_DEBUG=DETAIL logs every collective's fingerprint, plus warnings
run healthy_detail_fingerprints 3 29669 6 "--exit zero --has 'Running collective: CollectiveFingerPrint' --has 'FutureWarning' --lacks 'terminate called'" \
  TORCH_DISTRIBUTED_DEBUG=DETAIL TORCH_CPP_LOG_LEVEL=INFO -- scripts/healthy_manual_allreduce.py --timeout 5

# ---- two nodes on this machine (2026-12-07): the same local ranks on two hosts ------------
# Two torchrun agents (--nnodes 2 --node-rank 0/1, 2 processes each, static rendezvous on
# 127.0.0.1) started together, their stdout and stderr merged, unedited, into one file, as a
# Slurm job step without --label merges its tasks' output. Each agent runs in its own UTS
# namespace (`unshare --uts`, needs root) with the host name node-a or node-b, so that the two
# torchrun reports name two hosts; gloo then warns once per process that it cannot resolve that
# name and uses the loopback address. Every `[defaultN]:` prefix names a local rank, which
# both nodes have (global rank = 2 * node rank + local rank).
# run_two_nodes NAME PORT TRIES "CHECK-ARGS" -- SCRIPT [ARGS ...]
run_two_nodes() {
  local name=$1 port=$2 tries=$3 check=$4; shift 5
  want "$name" || return 0
  local i rc args
  args=$(printf ' %q' "$@")
  for ((i = 1; i <= tries; i++)); do
    (
      node() {
        unshare --uts bash -c "hostname $2 && exec timeout 120 $TORCHRUN --nnodes 2 --node-rank $1 \
          --nproc-per-node 2 --master-addr 127.0.0.1 --master-port $port --tee 3$args"
      }
      if [ "${SEPARATE:-0}" = 1 ]; then
        # each node's output in its own file, the files then read one after the other (node-a's
        # first), as `rootcause diagnose node-a.log node-b.log` reads them
        node 0 node-a > "$WORKSPACE/data/$name.node-a.log" 2>&1 & a=$!
        sleep 1
        node 1 node-b > "$WORKSPACE/data/$name.node-b.log" 2>&1 & b=$!
      else
        node 0 node-a & a=$!
        sleep 1
        node 1 node-b & b=$!
      fi
      wait $a; ra=$?
      wait $b; rb=$?
      [ "${SEPARATE:-0}" = 1 ] && cat "$WORKSPACE/data/$name.node-a.log" "$WORKSPACE/data/$name.node-b.log"
      [ $ra = 0 ] && [ $rb = 0 ]   # the job fails if either node fails
    ) > "$HERE/$name.log" 2>&1
    rc=$?
    shows "$name" "$rc" "$check" "$i" && return 0
  done
  failed "$name"
}
run_two_nodes two_nodes_indexerror 29670 2 "--has '[default1]:[rank3]: IndexError: list index out of range' --has 'host      : node-b'" \
  -- scripts/rank_indexerror.py --fail-rank 3
run_two_nodes two_nodes_silent_exit 29671 2 "--has 'rank      : 2 (local_rank: 0)' --has 'exitcode  : 1 (pid' --lacks '[rank2]: Traceback'" \
  -- scripts/silent_death.py --fail-rank 2 --mode exit1 --fail-step 3 --timeout 5
run_two_nodes two_nodes_exit_zero 29672 2 "--has 'Connection' --lacks 'rank      : 3 (local_rank: 1)' --lacks '[rank3]: Traceback'" \
  -- scripts/silent_death.py --fail-rank 3 --mode exit0 --timeout 5
run_two_nodes two_nodes_hang 29673 2 "--has 'Timed out waiting 5000ms' --lacks '[rank2]: Traceback'" \
  -- scripts/hang_barrier_timeout.py --fail-rank 2 --timeout 5
run_two_nodes two_nodes_segfault 29674 2 "--has 'Signal 11 (SIGSEGV)' --has 'rank      : 3 (local_rank: 1)'" \
  -- scripts/silent_death.py --fail-rank 3 --mode segv --timeout 5
# the same, each node's output in its own file, node-a's file read first: the node whose report
# comes first in the log is not the one whose failure came first
SEPARATE=1 run_two_nodes two_nodes_files_sigkill 29681 2 "--has 'Signal 9 (SIGKILL)' --has 'rank      : 3 (local_rank: 1)'" \
  -- scripts/rank_sigkill.py --fail-rank 3
run_two_nodes two_nodes_sigkill 29675 2 "--has 'Signal 9 (SIGKILL)' --has 'rank      : 1 (local_rank: 1)'" \
  -- scripts/rank_sigkill.py --fail-rank 1

if [ ${#FAILED[@]} -gt 0 ]; then
  echo "runs whose log does not match: ${FAILED[*]}" >&2
  exit 1
fi
