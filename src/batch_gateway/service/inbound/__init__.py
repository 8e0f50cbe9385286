"""Ways in that are not HTTP calls of a caller: the S3 drop folder, and providers' pushes that wake a parked job."""
