"""Command line: `python -m tpu_estimator_compat` (also the `tpu-estimator-compat` script).

    run [OPTIONS] SCRIPT.py [ARGS...]   run a legacy program unmodified (cli/runner.py)
    run [OPTIONS] -m MODULE [ARGS...]
    check [--problems-only] PATH...     list the TF1 APIs a codebase uses (cli/check.py)

argparse parses the command line up to the program (SCRIPT.py, or -m MODULE); what follows is
the program's own and is passed on untouched, so `run train.py --help` shows the program's
flags while `run --help` shows ours.
"""
import argparse
import os
import sys

CONSOLE_SCRIPT = "tpu-estimator-compat"
_RUN_OPTIONS_WITH_VALUE = ("--keep-tf2", "--v1-for", "--seed")

_RUN_HELP = """run a TensorFlow 1 program unmodified: its own imports of tensorflow,
tensorflow.compat.v1, tensorflow.contrib... and tensorflow_estimator get
tpu_estimator_compat.v1; libraries keep TensorFlow 2. Everything after SCRIPT.py (or
-m MODULE) is the program's own command line."""
_CHECK_HELP = """statically list the TF1 / contrib / estimator APIs used under each PATH
(files or directories of .py files), each supported, supported with a documented difference,
or unsupported (tensorflow.compat.v2 names: TF2); exit status 1 if anything is unsupported."""


def program_name(argv0=None):
    """How the user invoked us: the console script's name, or `python -m tpu_estimator_compat`."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    if os.path.basename(argv0 or "").startswith(CONSOLE_SCRIPT):
        return CONSOLE_SCRIPT
    return "python -m tpu_estimator_compat"


def version():
    """The release, as `tpu_estimator_compat.__version__` (the package root) names it."""
    import tpu_estimator_compat  # noqa: PLC0415
    return tpu_estimator_compat.__version__


def _parser(prog):
    parser = argparse.ArgumentParser(
        prog=prog, description="The TensorFlow 1 TPUEstimator API on TensorFlow 2.")
    parser.add_argument("--version", action="version", version=f"{CONSOLE_SCRIPT} {version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    run = commands.add_parser(
        "run", help="run a TensorFlow 1 program unmodified", description=_RUN_HELP,
        usage=f"{prog} run [--keep-tf2 DIR]... [--v1-for MODULE]... [--seed N] SCRIPT.py "
              "[ARGS...]\n"
              f"       {prog} run [--keep-tf2 DIR]... [--v1-for MODULE]... [--seed N] -m MODULE "
              "[ARGS...]")
    run.add_argument("--keep-tf2", metavar="DIR", action="append", default=[],
                     help="files under DIR count as libraries: they keep TensorFlow 2 "
                          "(repeatable)")
    run.add_argument("--v1-for", metavar="MODULE", action="append", default=[],
                     help="installed library MODULE (and its submodules) gets "
                          "tpu_estimator_compat.v1 too (repeatable; always: gin.tf)")
    run.add_argument("--seed", metavar="N", type=int,
                     help="every RunConfig the program builds without a tf_random_seed gets "
                          "N (its graph-level seed): reproducible runs of a program that "
                          "sets no seed")
    run.add_argument("-m", metavar="MODULE", dest="module",
                     help="run library module MODULE as a script, as `python -m` does")
    run.add_argument("script", metavar="SCRIPT.py", nargs="?",
                     help="the program (a file, a directory or zip with __main__.py)")
    check = commands.add_parser("check", help="list the TF1 APIs a codebase uses",
                                description=_CHECK_HELP)
    check.add_argument("paths", metavar="PATH", nargs="+", help="a .py file or a directory")
    check.add_argument("--problems-only", action="store_true",
                       help="print only the problems (UNSUPPORTED APIs, files that do "
                            "not parse) and the summary")
    return parser, {"run": run, "check": check}


def split_program_arguments(args):
    """`run`'s arguments -> (ours, the program's): ours end with SCRIPT.py or `-m MODULE`."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in _RUN_OPTIONS_WITH_VALUE or arg == "-m":
            index += 2
            if arg == "-m":
                return args[:index], args[index:]
            continue
        if not arg.startswith("-") or arg == "-":
            return args[:index + 1], args[index + 1:]
        index += 1  # --help, --keep-tf2=DIR, a misspelt option: argparse judges
    return args, []


def main(argv=None):
    """Runs the command in `argv` (default `sys.argv[1:]`); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser, command_parsers = _parser(program_name())
    program_args = []
    if argv[:1] == ["run"]:
        ours, program_args = split_program_arguments(argv[1:])
        argv = ["run"] + ours
    try:  # argparse exits on --help, --version and usage errors (which it prints)
        options, unknown = parser.parse_known_args(argv)
        command_parser = command_parsers[options.command]
        if unknown:
            command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        if options.command == "run" and not (options.module or options.script):
            command_parser.error("the following arguments are required: SCRIPT.py or -m MODULE")
    except SystemExit as exit_:
        return exit_.code
    if options.command == "check":
        from tpu_estimator_compat.cli import native_stderr  # noqa: PLC0415
        with native_stderr.native_stderr_captured():
            from tpu_estimator_compat.cli import check  # noqa: PLC0415  (imports TensorFlow)
            return check.main(options.paths, problems_only=options.problems_only)
    if options.script and not os.path.exists(options.script):
        print(f"{program_name()}: can't open file {os.path.abspath(options.script)!r}: "
              "no such file or directory", file=sys.stderr)
        return 2
    program = ["-m", options.module] if options.module else [options.script]
    from tpu_estimator_compat.cli import runner  # noqa: PLC0415
    runner.run(program + program_args, options.keep_tf2, options.v1_for, options.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
