"""Command line: `python -m tpu_estimator_compat` (also the `tpu-estimator-compat` script).

    run [--keep-tf2 DIR]... SCRIPT.py [ARGS...]    run a legacy program unmodified (runner.py)
    run [--keep-tf2 DIR]... -m MODULE [ARGS...]
    check PATH...                                 list the TF1 APIs a codebase uses (compat_check.py)
"""
import sys

USAGE = """usage: python -m tpu_estimator_compat run [--keep-tf2 DIR]... SCRIPT.py [ARGS...]
       python -m tpu_estimator_compat run [--keep-tf2 DIR]... -m MODULE [ARGS...]
       python -m tpu_estimator_compat check PATH...

run    runs a TensorFlow 1 program unmodified: its own imports of tensorflow,
       tensorflow.compat.v1, tensorflow.contrib... and tensorflow_estimator get
       tpu_estimator_compat.v1; libraries keep TensorFlow 2. Files under a --keep-tf2
       DIR count as libraries.
check  statically lists the TF1 / contrib / estimator APIs used under each PATH (files or
       directories of .py files), each supported, supported with a documented difference,
       or unsupported; exits 1 if anything is unsupported."""


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
        from tpu_estimator_compat import compat_check  # noqa: PLC0415  (imports TensorFlow)
        return compat_check.main(args)
    if command == "run":
        keep_tf2 = []
        while args[:1] == ["--keep-tf2"]:
            if len(args) < 2:
                return _usage_error("--keep-tf2 needs a DIR.")
            keep_tf2.append(args[1])
            args = args[2:]
        if not args or (args[0] == "-m" and len(args) < 2):
            return _usage_error("run needs SCRIPT.py or -m MODULE.")
        from tpu_estimator_compat import runner  # noqa: PLC0415
        runner.run(args, keep_tf2)
        return 0
    return _usage_error(f"unknown command {command!r}.")


if __name__ == "__main__":
    sys.exit(main())
