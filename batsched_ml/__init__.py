"""batsched-ml: an ML-augmented batch scheduler for Batsim 4 and a Batsim-faithful embedded simulator."""

__version__ = "0.1.0"
