"""`cupyx.scipy` of the stand-in (only `sparse`)."""
