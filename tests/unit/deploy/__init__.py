"""Unit tests of what ships beside the code: the manifests, the Helm chart, the image's
install steps, the alert rules.
"""
