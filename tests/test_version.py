"""``agnostic.__version__`` comes from the installed package's metadata."""

from importlib import metadata

import agnostic


def test_version_is_the_installed_distributions():
    distributions = metadata.packages_distributions().get("agnostic", [])
    expected = metadata.version(distributions[0]) if distributions else "0+unknown"
    assert agnostic.__version__ == expected
    assert agnostic.__version__[0].isdigit()  # "0.1.0" installed, "0+unknown" from an uninstalled tree


def test_a_missing_attribute_still_raises_attribute_error():
    try:
        agnostic.no_such_name
    except AttributeError as error:
        assert "no_such_name" in str(error)
    else:
        raise AssertionError("agnostic.no_such_name did not raise")
