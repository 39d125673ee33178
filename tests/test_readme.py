"""What the README promises a new user on its first screen, and the supported TensorFlow
versions it publishes (measured by tools/tf_versions.sh) agreeing with setup.cfg."""
import configparser
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIRST_SCREEN = 45  # lines


def _read(*path):
    with open(os.path.join(REPO, *path), encoding="utf-8") as f:
        return f.read()


def test_first_screen_shows_install_example_run_simulated_tpu_and_check():
    first = "\n".join(_read("README.md").splitlines()[:FIRST_SCREEN])
    for wanted in ("pip install -e '.[test]'", "python -m models.mnist.mnist_tpu",
                   "tpu-estimator-compat run train.py",
                   "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES=8",
                   "tpu-estimator-compat check path/to/project"):
        assert wanted in first, wanted


def test_set_up_commands_are_the_ones_ci_runs():
    readme, ci = _read("README.md"), _read(".ci", "run")
    set_up = readme[readme.index("## Set-up"):readme.index("## Migrating")]
    commands = re.findall(r"```bash\n(.*?)\n```", set_up, re.S)[:2]
    assert commands[0] == ("python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && "
                           ".venv/bin/python -m models.mnist.mnist_tpu")
    assert commands[1] == ".venv/bin/python -m pytest -q"
    for part in ("python3 -m venv .venv", ".venv/bin/pip install --quiet -e '.[test]'",
                 ".venv/bin/python -m models.mnist.mnist_tpu", ".venv/bin/python -m pytest -q"):
        assert part in ci, part


def _version_table():
    """{minor version: verdict} of README's "Supported TensorFlow versions" table."""
    readme = _read("README.md")
    section = readme[readme.index("## Supported TensorFlow versions"):]
    section = section[:section.index("\n## ", 1)]
    rows = re.findall(r"^\| (2\.\d+)(?:\.\d+)? +\|.*\| ([a-z ]+?) +\|$", section, re.M)
    return dict(rows)


def _minor(text):
    return tuple(int(part) for part in text.split(".")[:2])


def test_supported_versions_table_matches_setup_cfg_and_the_script():
    table = _version_table()
    script = _read("tools", "tf_versions.sh")
    defaults = re.search(r"versions=\(([\d. ]+)\); fi", script).group(1).split()
    assert sorted(table, key=_minor) == defaults  # a row per version the script covers
    assert set(table.values()) <= {"works", "does not work", "untested"}
    working = sorted((v for v, verdict in table.items() if verdict == "works"), key=_minor)
    assert working, table
    config = configparser.ConfigParser()
    config.read(os.path.join(REPO, "setup.cfg"))
    requirement = next(line.strip() for line in config["options"]["install_requires"].splitlines()
                       if line.strip().startswith("tensorflow"))
    low, high = re.fullmatch(r"tensorflow>=([\d.]+),<([\d.]+)", requirement).groups()
    newest = _minor(working[-1])
    assert _minor(low) == _minor(working[0])  # from the oldest version that works
    assert _minor(high) == (newest[0], newest[1] + 1)  # to the newest tested, no further
    for version, verdict in table.items():  # nothing that fails lies inside the range
        if _minor(low) <= _minor(version) < _minor(high):
            assert verdict != "does not work", version
