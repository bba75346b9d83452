"""The test environment, kumaco's envtest: what the tests run kumaco in and against.

The real kube-apiserver and etcd (``controlplane``), kwok's simulated kubelets (``kwok``),
the fault proxy (``faultproxy``), kumaco's replicas (``harness``, ``supervisor``, on a
shifted clock: ``shifted``, a fake one: ``clocks``), kured v2's real agents on simulated
machines (``kured``, ``kured_machine``), the real neighbours on loopback (``prometheus``,
``tinyproxy``, ``krew``) and their ports (``ports``), the container image (``image``), the rendered manifests
(``manifests``), forked runs of a command (``forkrun``) and the xdist workers' result
files (``workers``). It imports ``kumaco`` and nothing else of the test library: the
judges (``tests.support.judges``) and the programs (``tools``) stand on it.
"""
