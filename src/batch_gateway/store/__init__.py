"""Storage adapters: JobStore on DynamoDB, PayloadStore on S3. The only package (with local/) that uses boto3."""
