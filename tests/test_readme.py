"""What the README promises a new user (its first screen, its commands as CI and a shell
run them, its migration table), the links between the README and docs/, and the supported
TensorFlow versions docs/tensorflow-versions.md publishes (measured by tools/tf_versions.sh)
agreeing with setup.cfg."""
import configparser
import glob
import importlib
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIRST_SCREEN = 45  # lines
README_LINES = 80  # read in two minutes; the rest belongs in docs/
QUICK_TEST = '.venv/bin/python -m pytest -q -m "not slow"'


def _read(*path):
    with open(os.path.join(REPO, *path), encoding="utf-8") as f:
        return f.read()


def _commands(text):
    return re.findall(r"```bash\n(.*?)\n```", text, re.S)


def test_first_screen_shows_install_example_run_simulated_tpu_and_check():
    first = "\n".join(_read("README.md").splitlines()[:FIRST_SCREEN])
    for wanted in ("pip install -e '.[test]'", "python -m models.mnist.mnist_tpu",
                   "tpu-estimator-compat run train.py",
                   "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES=8",
                   "tpu-estimator-compat check path/to/project", QUICK_TEST):
        assert wanted in first, wanted
    assert len(_read("README.md").splitlines()) <= README_LINES


def test_set_up_commands_are_the_ones_ci_runs():
    readme, ci = _read("README.md"), _read(".ci", "run")
    set_up = readme[readme.index("## Set-up"):readme.index("## Migrating")]
    commands = _commands(set_up)[:2]
    assert commands[0] == ("python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && "
                           ".venv/bin/python -m models.mnist.mnist_tpu")
    assert commands[1] == ".venv/bin/python -m pytest -q"
    for part in ("python3 -m venv .venv", ".venv/bin/pip install --quiet -e '.[test]'",
                 ".venv/bin/python -m models.mnist.mnist_tpu", ".venv/bin/python -m pytest -q"):
        assert part in ci, part


def test_quick_test_and_every_command_run_as_written_from_the_repository_root():
    readme = _read("README.md")
    assert QUICK_TEST in _commands(readme)
    script = "\n".join(_commands(readme)).replace("\\\n", " ")
    for line in script.splitlines():
        for command in line.split("#")[0].split("&&"):
            program = next(w for w in command.split() if "=" not in w)
            assert program == "python3" or program.startswith(".venv/bin/"), command
    config = configparser.ConfigParser()
    config.read(os.path.join(REPO, "setup.cfg"))
    assert re.search(r"^\s*slow:", config["tool:pytest"]["markers"], re.M)


def _served(module):
    """Where the v1 namespace serves a TF 1.x module path (the README's migration rule)."""
    return re.sub(r"^(tensorflow_estimator|tensorflow)(\.compat\.v1)?(?=\.|$)",
                  "tpu_estimator_compat.v1", module)


def test_migration_table_follows_the_rule_and_imports():
    readme = _read("README.md")
    start = readme.index("## Migrating")
    table = readme[start:readme.index("\n## ", start)]
    rows = re.findall(r"^\| `(.+?)`(.*?)\| `(.+?)` *\|$", table, re.M)
    assert len(rows) >= 5, rows
    for before, note, after in rows:
        statement = re.fullmatch(r"(import|from) (\S+)( .*)", before)
        served = _served(statement[2])
        if "TF 2.x" in note and "TF 1" not in note:  # TF 2.x-era code: TensorFlow 2 + estimator
            served = served.replace("tpu_estimator_compat.v1", "tpu_estimator_compat.v2")
        assert after == f"{statement[1]} {served}{statement[3]}", before
        module = after.split()[1]
        if after.startswith("from "):
            getattr(importlib.import_module(module), after.split()[-1])
        else:
            importlib.import_module(module)


def _anchor(heading):
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_links_between_readme_and_docs_reach_files_and_headings():
    pages = ["README.md"] + sorted(os.path.relpath(p, REPO)
                                   for p in glob.glob(os.path.join(REPO, "docs", "*.md")))
    assert len(pages) > 5, pages
    for page in pages:
        text = _read(page)
        assert page == "README.md" or f"({page})" in _read("README.md"), page
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://")):
                continue
            path, _, anchor = target.partition("#")
            path = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            assert os.path.exists(os.path.join(REPO, path)), (page, target)
            if anchor:
                headings = re.findall(r"^#+ (.+)$", _read(path), re.M)
                assert anchor in {_anchor(h) for h in headings}, (page, target)


def _version_table():
    """{minor version: verdict} of docs/tensorflow-versions.md's table."""
    section = _read("docs", "tensorflow-versions.md")
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
