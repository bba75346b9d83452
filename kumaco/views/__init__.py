"""What people read: the status report, text tables and the timeline picture.

Pure renderers over the core's answers (an instant ``now`` is passed in, never read);
may import :mod:`kumaco.core` only.
"""
