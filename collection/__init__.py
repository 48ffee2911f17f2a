"""collection: a many-page collection source (public.https.collection@2.0.0)."""

__version__ = "0.1.0"
