"""Errors that the CLI turns into one clear message and an exit code."""


class EdgebenchError(Exception):
    """A failure with a message meant for the user (exit code 1)."""

    exit_code = 1


class SpecError(EdgebenchError):
    """Bad input: the sweep spec, a parameter or an argument (exit code 2, nothing was changed)."""

    exit_code = 2


class NotRootError(EdgebenchError):
    exit_code = 1
