"""Command line: `python -m tpu_estimator_compat` (also the `tpu-estimator-compat` script).

    run [OPTIONS] SCRIPT.py [ARGS...]   run a legacy program unmodified (cli/runner.py); OPTIONS:
    run [OPTIONS] -m MODULE [ARGS...]   --keep-tf2 DIR, --v1-for MODULE (each repeatable)
    check PATH...                       list the TF1 APIs a codebase uses (cli/check.py)
"""
import os
import sys

USAGE = """usage: python -m tpu_estimator_compat run [--keep-tf2 DIR]... [--v1-for MODULE]...
                                          SCRIPT.py [ARGS...]
       python -m tpu_estimator_compat run [--keep-tf2 DIR]... [--v1-for MODULE]...
                                          -m MODULE [ARGS...]
       python -m tpu_estimator_compat check PATH...

run    runs a TensorFlow 1 program unmodified: its own imports of tensorflow,
       tensorflow.compat.v1, tensorflow.contrib... and tensorflow_estimator get
       tpu_estimator_compat.v1; libraries keep TensorFlow 2. Files under a --keep-tf2
       DIR count as libraries; a --v1-for MODULE library (and its submodules) gets
       tpu_estimator_compat.v1 too (always: gin.tf).
check  statically lists the TF1 / contrib / estimator APIs used under each PATH (files or
       directories of .py files), each supported, supported with a documented difference,
       or unsupported (tensorflow.compat.v2 names: TF2); exits 1 if anything is
       unsupported."""


def _usage_error(message):
    print(f"tpu_estimator_compat: {message}\n{USAGE}", file=sys.stderr)
    return 2


def main(argv=None):
    """Runs the command in `argv` (default `sys.argv[1:]`); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    command, args = argv[0], argv[1:]
    if command == "check":
        if not args:
            return _usage_error("check needs at least one PATH.")
        from tpu_estimator_compat.cli import check  # noqa: PLC0415  (imports TensorFlow)
        return check.main(args)
    if command == "run":
        options = {"--keep-tf2": ("DIR", []), "--v1-for": ("MODULE", [])}
        while args[:1] and args[0] in options:
            what, values = options[args[0]]
            if len(args) < 2:
                return _usage_error(f"{args[0]} needs a {what}.")
            values.append(args[1])
            args = args[2:]
        if not args or (args[0] == "-m" and len(args) < 2):
            return _usage_error("run needs SCRIPT.py or -m MODULE.")
        if args[0] != "-m" and not os.path.exists(args[0]):
            print(f"tpu_estimator_compat: can't open file {os.path.abspath(args[0])!r}: "
                  "no such file or directory", file=sys.stderr)
            return 2
        from tpu_estimator_compat.cli import runner  # noqa: PLC0415
        runner.run(args, options["--keep-tf2"][1], options["--v1-for"][1])
        return 0
    return _usage_error(f"unknown command {command!r}.")


if __name__ == "__main__":
    sys.exit(main())
