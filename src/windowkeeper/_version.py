"""The version, written once: the package, the CLI and the build (hatch) read it here."""

__version__ = "0.1.0"
