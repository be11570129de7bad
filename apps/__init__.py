"""The user-facing commands: the ``treppen`` CLI, terminal play and replay, the web page, the env benchmark."""
