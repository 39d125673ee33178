"""Runs the corpus of real TPUEstimator programs tiny and offline; prints the compatibility table.

    python tests/real_programs/run.py SNAPSHOTS [--only NAME,...] [--modes MODE,...]

SNAPSHOTS holds one directory per repository snapshot (`owner+name`, e.g. `google-research+bert`)
with the repository's files at the commit listed in `recipes/`. Each program runs in a fresh
copy, on tiny data generated for it, in up to four modes:

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

A mode is `ok` when the program exits 0 and wrote what its recipe expects (checkpoints,
results). Logs and results.json go to --logs; the table printed at the end covers every
program recorded there, so runs of subsets into one --logs build one table. Not a pytest
module: it needs the snapshots and minutes of CPU.
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

import recipes  # noqa: E402
import rewrite  # noqa: E402

PACKAGE_ROOT = os.path.dirname(os.path.dirname(HERE))
MODES = ("rewrite-cpu", "rewrite-tpu", "runner-cpu", "runner-tpu", "check")
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
    if mode.startswith("rewrite"):
        rewrite.rewrite_tree(os.path.join(work, "src"))


def check_status(output, rc):
    """The check mode's status from the checker's output and exit status."""
    unsupported = sorted({line.split()[1] for line in output.splitlines()
                          if line.strip().startswith("UNSUPPORTED")})
    if rc == 0 and not unsupported:
        return "ok"
    if not unsupported:
        return "FAIL: " + failure_reason(output)
    return "FAIL: %d unsupported: %s" % (len(unsupported), ", ".join(unsupported))


def run_one(program, mode, snapshots, python, logs, timeout):
    """Runs `program` in `mode`; returns (status, seconds)."""
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
    src = os.path.join(work, "src")
    script = os.path.join(src, program.script)
    entry = ["-m", program.module] if program.module else [script]
    if mode == "check":
        command = [python, "-m", "tpu_estimator_compat", "check"] + [
            os.path.join(src, p) for p in program.check_paths]
    elif mode.startswith("rewrite") and program.tf1_libraries:
        command = [python, "-m", "tpu_estimator_compat", "run", "--keep-tf2", src]
        for library in program.tf1_libraries:
            command += ["--v1-for", library]
        command += entry
    elif mode.startswith("rewrite"):
        command = [python] + entry
    else:
        command = [python, "-m", "tpu_estimator_compat", "run"] + entry
    # Only the package itself goes on the path: the repository root's other top-level
    # packages (`models`...) would shadow programs' own namespace packages.
    package_dir = os.path.join(work, "package")
    os.makedirs(package_dir)
    os.symlink(os.path.join(PACKAGE_ROOT, "tpu_estimator_compat"),
               os.path.join(package_dir, "tpu_estimator_compat"))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=os.pathsep.join(
                   [os.path.join(src, p) for p in program.pythonpath] + [package_dir]))
    env.pop(SIMULATED_TPU_ENV, None)
    if use_tpu:
        env[SIMULATED_TPU_ENV] = "8"
    log_path = os.path.join(logs, "%s-%s.log" % (program.name, mode))
    start = time.time()
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
    seconds = time.time() - start
    with open(log_path, errors="replace") as log:
        text = log.read()
    if rc is None:
        status = "FAIL: timeout after %ds" % timeout
    elif mode == "check":
        status = check_status(text, rc)
    elif rc != 0:
        status = "FAIL: " + failure_reason(text)
    else:
        missing = [p for p in expected if not glob.glob(p)]  # patterns: timestamped exports
        status = "ok" if not missing else "FAIL: exit 0 but no " + os.path.relpath(
            missing[0], work)
    shutil.rmtree(work, ignore_errors=True)
    return status, seconds


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
            failed = failed or status not in ("ok", "n/a")
            print("%-20s %-12s %6.0fs  %s" % (program.name, mode, seconds, status), flush=True)
            with open(results_path, "w") as f:
                json.dump(recorded, f, indent=1)
    print()
    print(table([(p, recorded[p.name]) for p in recipes.PROGRAMS if p.name in recorded],
                MODES))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
