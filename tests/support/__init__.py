"""The test support library: what kumaco's tests and hack/ scripts are built on.

Under mypy --strict like ``kumaco/``. Nothing here ships in the package.
"""
