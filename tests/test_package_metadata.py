"""setup.cfg's metadata is complete and agrees with the repository: project URLs, a contact
without a placeholder address, the license file, the TensorFlow range install_requires
pins named in the summary, classifiers for the tested Python versions only, a changelog
entry for the version."""
import os
import re

from setuptools.config.setupcfg import read_configuration

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOME = "https://github.com/tpu-estimator-compat/tpu-estimator-compat"


def _read(*path):
    with open(os.path.join(REPO, *path), encoding="utf-8") as f:
        return f.read()


def _config():
    return read_configuration(os.path.join(REPO, "setup.cfg"))


def test_urls_name_the_home_and_the_issue_tracker():
    metadata = _config()["metadata"]
    assert metadata["url"] == HOME
    urls = metadata["project_urls"]
    assert urls["Source"] == HOME and urls["Issue Tracker"] == f"{HOME}/issues"
    assert urls["Changelog"].endswith("/CHANGELOG.md")
    assert urls["Documentation"].endswith("/docs")
    assert all(url.startswith(f"{HOME}/") or url == HOME for url in urls.values()), urls


def test_contact_has_no_placeholder_address():
    metadata = _config()["metadata"]
    assert metadata["author"] and metadata["maintainer"]
    for field in ("author_email", "maintainer_email"):
        address = metadata.get(field, "")
        assert not re.search(r"\.example\b|noreply|example\.(com|org)", address), address


def test_license_file_is_the_apache_2_text_the_metadata_names():
    metadata = _config()["metadata"]
    assert metadata["license"] == "Apache-2.0"
    assert metadata["license_files"] == ["LICENSE"]
    text = _read("LICENSE")
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "License :: OSI Approved :: Apache Software License" in metadata["classifiers"]


def test_summary_names_the_tensorflow_range_install_requires_pins():
    config = _config()
    pin = next(r for r in config["options"]["install_requires"] if r.startswith("tensorflow"))
    low, major, minor = re.fullmatch(r"tensorflow>=([\d.]+),<(\d+)\.(\d+)", pin).groups()
    newest = f"{major}.{int(minor) - 1}"
    assert f"TensorFlow {low}-{newest} " in config["metadata"]["description"], pin


def test_python_classifiers_are_the_tested_versions_python_requires_admits():
    config = _config()
    tested = re.search(r"tested: ([\d., ]+?) \(", _read("docs", "tensorflow-versions.md"))
    tested = [v.strip() for v in tested.group(1).split(",")]
    listed = [c.rsplit(" :: ", 1)[1] for c in config["metadata"]["classifiers"]
              if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
    assert listed == tested, (listed, tested)
    lowest = re.fullmatch(r">=3\.(\d+)", str(config["options"]["python_requires"])).group(1)
    assert all(int(v.split(".")[1]) >= int(lowest) for v in listed)


def test_changelog_has_the_current_version():
    version = _config()["metadata"]["version"]
    assert re.search(rf"^## {re.escape(version)}\b", _read("CHANGELOG.md"), re.M), version
