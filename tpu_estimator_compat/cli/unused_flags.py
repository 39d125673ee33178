"""Names, once, the command-line flags a legacy program's absl flags never consumed.

`tf.app.run()` parses the command line with `FLAGS(sys.argv, known_only=True)` (TensorFlow's
tolerance), so a misspelt flag (`--trian_steps=5`) reaches `main`'s argv and is silently
ignored. While `run` runs a program, absl's parse is wrapped: the flag-like arguments a
parse of the program's command line leaves over are named on stderr, once per run, each
with the defined flag it resembles. Positional arguments, arguments after `--` and
arguments not on the command line (a flag file's, ones the program made up) are the
program's own business and never named. absl's strict parse (`absl.app.run`) raises on an
unknown flag itself, before this could say anything.
"""
import contextlib
import difflib
import functools
import sys

from absl import flags

PREFIX = "tpu-estimator-compat run: warning: "


@contextlib.contextmanager
def warned(flag_values=None):
    """While inside, a parse of `flag_values` (absl's FLAGS by default) that leaves flags of
    sys.argv unconsumed prints one warning naming them."""
    watched = flags.FLAGS if flag_values is None else flag_values
    original = flags.FlagValues.__call__
    named = set()

    @functools.wraps(original)
    def parse(self, argv, *args, **kwargs):
        unparsed = original(self, argv, *args, **kwargs)
        if self is watched:
            unused = [arg for arg in _flag_like(unparsed[1:])
                      if arg in sys.argv[1:] and arg not in named]
            if unused and not named:
                sys.stderr.write(message(unused, list(self)))
            named.update(unused)
        return unparsed

    flags.FlagValues.__call__ = parse
    try:
        yield
    finally:
        flags.FlagValues.__call__ = original


def _flag_like(args):
    """`-x` / `--name[=value]` arguments, up to a `--`."""
    for arg in args:
        if arg == "--":
            return
        if arg.startswith("-") and arg.lstrip("-")[:1].isalpha():
            yield arg


def message(unused, flag_names):
    """The warning naming `unused`, each with the flag of `flag_names` it resembles."""
    described = []
    for arg in unused:
        name = arg.lstrip("-").split("=", 1)[0]
        close = difflib.get_close_matches(name, flag_names, n=1)
        described.append(f"{arg} (did you mean --{close[0]}?)" if close else arg)
    return (f"{PREFIX}no flag of the program consumed {', '.join(described)}; "
            "tf.app.run passes unknown flags on to main, which ignores them. Check the "
            "spelling (`--helpfull` lists the program's flags).\n")
