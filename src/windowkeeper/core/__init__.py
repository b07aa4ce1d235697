"""The faithful core: the original's context-management algorithm, pure.

No I/O and no clock: every function takes the history, the overwrite store, the range and the
timestamps it needs, and returns new values. Everything above (the Cline task folders, the
session, storage, formats, tools, the CLI) builds on these modules; nothing here imports them.
"""
