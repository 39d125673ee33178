"""Runs the corpus of real TPUEstimator programs tiny and offline; prints the compatibility table.

    python tests/real_programs/run.py SNAPSHOTS [--only NAME,...] [--modes MODE,...]

SNAPSHOTS holds one directory per repository snapshot (`owner+name`, e.g. `google-research+bert`)
with the repository's files at the commit listed in `recipes/`. Each program runs in a fresh
copy, on tiny data generated for it, in up to seven modes:

  rewrite-cpu   imports rewritten `tensorflow` -> `tpu_estimator_compat.v1`, use_tpu=False;
                run with `python`, or, when the program imports TF1-era libraries
                (`tf1_libraries`: gin.tf, tensorflow_hub < 0.16, which import TF1 names
                themselves), with `python -m tpu_estimator_compat run --keep-tf2 SRC
                --v1-for LIBRARY...`: the program's rewritten files as they are, those
                libraries served the v1 namespace
  rewrite-tpu   same, use_tpu=True on the simulated 8-core TPU
  runner-cpu    unmodified, `python -m tpu_estimator_compat run SCRIPT ARGS`, use_tpu=False
  runner-tpu    same, use_tpu=True on the simulated 8-core TPU
  check         `python -m tpu_estimator_compat check` on the program's files: ok when it
                reports no unsupported API
  eval-recheck  trains and evaluates as runner-tpu does (runner-cpu without a TPU switch),
                then evaluates the same model directory in a fresh process (the recipe's
                `eval_only` argv): ok when the two evaluations' metrics are equal and their
                losses within 5e-4 (`numbers_checks.py`)
  replica-check a short deterministic run (the recipe's `replica_check`, through the runner
                with `--seed 0`) on 8 simulated TPU cores, then on 1 from the 8-core run's
                step-0 checkpoint, the same global batch: ok when every model weight is
                the 1-replica run's (within 1e-5 of its largest value plus 1e-3 of the
                largest update), and so are the optimizer slots the recipe names (`slots`);
                for a program that sums its own gradients across replicas
                (`gradients="sum"`), when those slots hold TF1's sum (`numbers_checks.py`);
                `n/a (reason)` where no 1-replica run gives TF1's TPU numbers (dropout
                without a flag...)

A run mode is `ok` when the program exits 0 and wrote what its recipe expects (checkpoints,
results); a numbers check's status is `ok` or `FAIL:` with the numbers compared. Logs and
results.json go to --logs; the table printed at the end covers every program recorded
there, so runs of subsets into one --logs build one table. Not a pytest module: it needs the
snapshots and minutes of CPU.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import notebook  # noqa: E402
import numbers_checks  # noqa: E402
import recipes  # noqa: E402
import rewrite  # noqa: E402

PACKAGE_ROOT = os.path.dirname(os.path.dirname(HERE))
MODES = ("rewrite-cpu", "rewrite-tpu", "runner-cpu", "runner-tpu", "check", "eval-recheck",
         "replica-check")
SIMULATED_TPU_ENV = "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES"


def runner_available():
    return os.path.exists(os.path.join(PACKAGE_ROOT, "tpu_estimator_compat", "__main__.py"))


_LOG_LINE = re.compile(r"^[IWEF]\d{4} ")  # absl / TensorFlow log lines
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b")


def failure_reason(log_text, limit=100):
    """The exception line of the last traceback in a log, a native crash's message, or the
    log's last line."""
    lines = log_text.rstrip().splitlines()
    fatal = [i for i, line in enumerate(lines) if line.startswith("Fatal Python error")]
    if fatal:  # a crash in native code: its own message, if any, is the line before
        i = fatal[-1]
        native = i and not _LOG_LINE.match(lines[i - 1])
        return ((lines[i - 1] + ": " if native else "") + lines[i])[:limit]
    start = max((i for i, line in enumerate(lines) if line.startswith("Traceback")), default=None)
    if start is not None:
        tail = [line for line in lines[start + 1:] if line and not line[0].isspace()]
        # The exception's first line (its message may span several lines).
        named = [line for line in tail if _EXCEPTION_LINE.match(line)]
        if named or tail:
            return (named or tail)[-1][:limit]
    return (lines[-1] if lines else "no output")[:limit]


def prepare_copy(program, snapshots, work, mode):
    for snapshot, copy_from, copy_to in (((program.snapshot, program.copy_from,
                                           program.copy_to),) + tuple(program.with_snapshots)):
        source = os.path.join(snapshots, snapshot, copy_from)
        if not os.path.isdir(source):
            raise FileNotFoundError("snapshot directory %s not found" % source)
        target = os.path.join(work, "src", copy_to)
        shutil.copytree(source, target, ignore=shutil.ignore_patterns(".git", "*.ipynb"),
                        dirs_exist_ok=True)  # a git submodule's empty directory
    if program.notebook:
        source = os.path.join(snapshots, program.snapshot, program.copy_from, program.notebook)
        with open(os.path.join(work, "src", program.script), "w", encoding="utf-8") as f:
            f.write(notebook.notebook_source(source))
    if mode.startswith("rewrite"):
        rewrite.rewrite_tree(os.path.join(work, "src"), tf2=program.tf2)


def check_status(output, rc):
    """The check mode's status from the checker's output and exit status."""
    unsupported = sorted({line.split()[1] for line in output.splitlines()
                          if line.strip().startswith("UNSUPPORTED")})
    if rc == 0 and not unsupported:
        return "ok"
    if not unsupported:
        return "FAIL: " + failure_reason(output)
    return "FAIL: %d unsupported: %s" % (len(unsupported), ", ".join(unsupported))


def command_for(program, mode, src, python, seed=None):
    """The command line (without the program's own arguments) that runs `program` in `mode`;
    through the runner with `seed`, its RunConfigs get that seed where they set none."""
    script = os.path.join(src, program.script)
    entry = ["-m", program.module] if program.module else [script]
    if mode == "check":
        return [python, "-m", "tpu_estimator_compat", "check"] + [
            os.path.join(src, p) for p in program.check_paths]
    run = [python, "-m", "tpu_estimator_compat", "run"] + (
        [] if seed is None else ["--seed", str(seed)])
    if mode.startswith("rewrite") and program.tf1_libraries:
        command = run + ["--keep-tf2", src]
        for library in program.tf1_libraries:
            command += ["--v1-for", library]
        return command + entry
    if mode.startswith("rewrite"):
        return [python] + entry
    return run + entry


def environment(program, work, cores):
    """The program's environment: its paths, and `cores` simulated TPU cores (None: none)."""
    # Only the package itself goes on the path: the repository root's other top-level
    # packages (`models`...) would shadow programs' own namespace packages.
    package_dir = os.path.join(work, "package")
    if not os.path.isdir(package_dir):
        os.makedirs(package_dir)
        os.symlink(os.path.join(PACKAGE_ROOT, "tpu_estimator_compat"),
                   os.path.join(package_dir, "tpu_estimator_compat"))
    src = os.path.join(work, "src")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=os.pathsep.join(
                   [os.path.join(src, p) for p in program.pythonpath] + [package_dir]))
    env.pop(SIMULATED_TPU_ENV, None)
    if program.environ:
        env.update(program.environ(work))
    if cores:
        env[SIMULATED_TPU_ENV] = str(cores)
    return env


def run_logged(command, argv, work, env, log_path, timeout):
    """Runs `command` with `argv` (or each of a list of argvs, in order, until one fails) under
    `nice`, logging into `log_path`; returns the last exit status (None: timed out) and the
    log's text."""
    # A program run in several invocations (train, then evaluate...) gets a list of argvs.
    runs = argv if argv and isinstance(argv[0], (list, tuple)) else [argv]
    rc = 0
    with open(log_path, "w") as log:
        for run_argv in runs:
            log.write("$ cd %s && %s\n" % (work, " ".join(command + list(run_argv))))
            log.flush()
            try:
                rc = subprocess.run(["nice", "-n", "10"] + command + list(run_argv), cwd=work,
                                    env=env, stdout=log, stderr=subprocess.STDOUT,
                                    timeout=timeout, stdin=subprocess.DEVNULL).returncode
            except subprocess.TimeoutExpired:
                rc = None
            if rc != 0:
                break
    with open(log_path, errors="replace") as log:
        return rc, log.read()


def run_status(rc, text, timeout):
    if rc is None:
        return "FAIL: timeout after %ds" % timeout
    return "FAIL: " + failure_reason(text)


def run_one(program, mode, snapshots, python, logs, timeout):
    """Runs `program` in `mode`; returns (status, seconds)."""
    if mode in NUMBERS_CHECKS:
        start = time.time()
        status = NUMBERS_CHECKS[mode](program, snapshots, python, logs, timeout)
        return status, time.time() - start
    use_tpu = mode.endswith("tpu")
    if (use_tpu and not program.has_use_tpu) or (
            not use_tpu and program.tpu_only and mode != "check"):
        return "n/a", 0.0
    if not mode.startswith("rewrite") and not runner_available():
        return "not run (no runner yet)", 0.0
    work = tempfile.mkdtemp(prefix="%s-%s-" % (program.name, mode))
    try:
        prepare_copy(program, snapshots, work, mode)
        argv, expected = ([], []) if mode == "check" else program.prepare(work, use_tpu)
    except Exception as e:  # a recipe's own failure: report it, go on with the others
        shutil.rmtree(work, ignore_errors=True)
        return "FAIL (recipe): %s: %s" % (type(e).__name__, e), 0.0
    command = command_for(program, mode, os.path.join(work, "src"), python)
    env = environment(program, work, 8 if use_tpu else None)
    start = time.time()
    rc, text = run_logged(command, argv, work, env,
                          os.path.join(logs, "%s-%s.log" % (program.name, mode)), timeout)
    seconds = time.time() - start
    if mode == "check" and rc is not None:
        status = check_status(text, rc)
    elif rc != 0:
        status = run_status(rc, text, timeout)
    else:
        missing = [p for p in expected if not glob.glob(p)]  # patterns: timestamped exports
        unseen = [p for p in program.log_expects if not re.search(p, text, re.MULTILINE)]
        status = ("FAIL: exit 0 but no " + os.path.relpath(missing[0], work) if missing else
                  "FAIL: exit 0 but the log does not match %r" % unseen[0] if unseen else "ok")
    shutil.rmtree(work, ignore_errors=True)
    return status, seconds


def eval_recheck(program, snapshots, python, logs, timeout):
    """Trains and evaluates as the recipe does (on the simulated TPU where the program has a
    TPU switch, through the runner), then evaluates the model directory again in a fresh
    process with the recipe's eval-only argv; compares the two evaluations."""
    if isinstance(program.eval_only, str):
        return "n/a (%s)" % program.eval_only
    if program.eval_only is None:
        return "not run (no eval-only argv in the recipe)"
    use_tpu = program.has_use_tpu
    mode = "runner-tpu" if use_tpu else "runner-cpu"
    work = tempfile.mkdtemp(prefix="%s-eval-recheck-" % program.name)
    try:
        try:
            prepare_copy(program, snapshots, work, mode)
            argv, _ = program.prepare(work, use_tpu)
            eval_argv = program.eval_only(work, use_tpu)
        except Exception as e:  # a recipe's own failure: report it, go on with the others
            return "FAIL (recipe): %s: %s" % (type(e).__name__, e)
        # seeded: an evaluation input shuffled without a seed (mnasnet's) takes another order
        # in each process, in TF1 too, and on a TPU the loss reported is replica 0's
        command = command_for(program, mode, os.path.join(work, "src"), python, seed=0)
        env = environment(program, work, 8 if use_tpu else None)
        texts = []
        for part, run_argv in (("train", argv), ("fresh", eval_argv)):
            rc, text = run_logged(command, run_argv, work, env, os.path.join(
                logs, "%s-eval-recheck-%s.log" % (program.name, part)), timeout)
            if rc != 0:
                return "%s (%s run)" % (run_status(rc, text, timeout), part)
            texts.append(text)
        read = getattr(numbers_checks, program.eval_log)
        return numbers_checks.compare_evaluations(read(texts[0]), read(texts[1]))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def replica_check(program, snapshots, python, logs, timeout):
    """Runs the recipe's short deterministic run on 8 simulated TPU cores, then on 1 from the
    8-core run's step-0 checkpoint; compares the final weights (`numbers_checks.
    compare_weights`). The checkpoints compared stay in LOGS/NAME-replica-check/ (step-0,
    8, 1)."""
    if isinstance(program.replica_check, str):
        return "n/a (%s)" % program.replica_check
    if not program.has_use_tpu:
        return "n/a (no TPU switch)"
    if program.replica_check is None:
        return "not run (no deterministic run in the recipe)"
    kept = os.path.join(logs, "%s-replica-check" % program.name)
    shutil.rmtree(kept, ignore_errors=True)
    finals = {}
    for cores in (8, 1):
        work = tempfile.mkdtemp(prefix="%s-replica-check-%d-" % (program.name, cores))
        try:
            try:
                prepare_copy(program, snapshots, work, "runner-tpu")
                argv, model_dir = program.replica_check(work, cores)
            except Exception as e:  # a recipe's own failure, as in run_one
                return "FAIL (recipe): %s: %s" % (type(e).__name__, e)
            if cores == 1:
                numbers_checks.seed_model_dir(initial, model_dir)
            command = command_for(program, "runner-tpu", os.path.join(work, "src"), python,
                                  seed=0)  # the same shuffles in both runs
            rc, text = run_logged(command, argv, work, environment(program, work, cores),
                                  os.path.join(logs, "%s-replica-check-%d.log" % (
                                      program.name, cores)), timeout)
            if rc != 0:
                return "%s (%d replica(s))" % (run_status(rc, text, timeout), cores)
            saved = numbers_checks.checkpoints(model_dir)
            if cores == 8:
                if 0 not in saved:
                    return "FAIL: no step-0 checkpoint in %s" % os.path.relpath(
                        model_dir, work)
                initial = numbers_checks.seed_model_dir(saved[0],
                                                        os.path.join(kept, "step-0"))
            step = max(saved)
            finals[cores] = (step, numbers_checks.seed_model_dir(
                saved[step], os.path.join(kept, str(cores))))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    if finals[8][0] != finals[1][0]:
        return "FAIL: the runs ended at steps %d (8 replicas) and %d (1)" % (
            finals[8][0], finals[1][0])
    values = [numbers_checks.checkpoint_values(p) for p in (initial, finals[8][1],
                                                            finals[1][1])]
    return "%s, step %d" % (replica_status(program, *values), finals[8][0])


def replica_status(program, initial, replicas, single):
    """The replica check's status from the checkpoints' values: a SUM program's slots hold TF1's
    sum (8 replicas: 8**power x the 1-replica run's); a MEAN program's weights are the
    1-replica run's, and so are the slots its recipe names (1 x)."""
    if program.gradients == "sum":  # TF1's sum across replicas, read in the slots
        return numbers_checks.compare_slots(replicas, single, {
            suffix: 8 ** power for suffix, power in program.slots.items()})
    status = numbers_checks.compare_weights(initial, replicas, single)
    if not program.slots or not status.startswith("ok"):
        return status
    slots = numbers_checks.compare_slots(replicas, single, dict.fromkeys(program.slots, 1))
    return slots if not slots.startswith("ok") else "%s; %s)" % (status[:-1], slots[4:-1])


NUMBERS_CHECKS = {"eval-recheck": eval_recheck, "replica-check": replica_check}


def table(results, modes):
    head = ["program", "repository", "commit", "what it exercises"] + list(modes)
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for program, statuses in results:
        cells = [program.name, program.repo, program.commit[:12], program.exercises]
        cells += [statuses.get(m, "-").replace("|", "/") for m in modes]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshots", help="directory holding the owner+name snapshots")
    parser.add_argument("--only", default="", help="comma-separated program names")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--logs", default=os.path.join(tempfile.gettempdir(), "real_programs"))
    parser.add_argument("--timeout", type=int, default=900, help="seconds per run")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--table", action="store_true",
                        help="only print the table recorded in --logs")
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    unknown = set(modes) - set(MODES)
    if unknown:
        parser.error("unknown mode(s) %s; choose from %s" % (sorted(unknown), ", ".join(MODES)))
    programs = recipes.PROGRAMS
    if args.only:
        names = args.only.split(",")
        missing = set(names) - set(recipes.by_name())
        if missing:
            parser.error("unknown program(s) %s" % sorted(missing))
        programs = [p for p in programs if p.name in names]
    os.makedirs(args.logs, exist_ok=True)
    results_path = os.path.join(args.logs, "results.json")
    recorded = {}
    if os.path.exists(results_path):  # earlier runs into the same --logs: one table for all
        with open(results_path) as f:
            recorded = json.load(f)
    if args.table:
        programs = []
    failed = False
    for program in programs:
        statuses = recorded.setdefault(program.name, {})
        for mode in modes:
            status, seconds = run_one(program, mode, args.snapshots, args.python, args.logs,
                                      args.timeout)
            statuses[mode] = status
            failed = failed or not status.startswith(("ok", "n/a"))
            print("%-20s %-12s %6.0fs  %s" % (program.name, mode, seconds, status), flush=True)
            with open(results_path, "w") as f:
                json.dump(recorded, f, indent=1)
    print()
    print(table([(p, recorded[p.name]) for p in recipes.PROGRAMS if p.name in recorded],
                MODES))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
