"""Notifications of maintenance moments to people (``--notify-url``): messages and their sender.

Contract: :mod:`~kumaco.notify.messages` turns a moment the controller decided into one
message (pure); :mod:`~kumaco.notify.sender` delivers it through Apprise beside the
reconcile loop. Only the leader publishes; nothing here reaches the API server.
"""
