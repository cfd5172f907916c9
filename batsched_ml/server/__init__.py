"""ZeroMQ transports: the decision server for a real Batsim (``serve``) and the embedded
simulator as a Batsim peer (``simulate --connect``)."""
