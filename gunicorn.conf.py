"""gunicorn's settings for every web server of the service (``make run``, the deployment of
docs/deploy.md pass ``-c gunicorn.conf.py``; the bench and chaos stacks start gunicorn in this folder, where
gunicorn reads this file by default).

The request line may take 8,190 bytes (gunicorn's most; its default is 4,094): the longest
request the API schema allows, a 512-character section id of 4-byte characters percent-encoded
(12 bytes each), is 6,168 bytes. A longer line is answered 414, as the schema says."""

limit_request_line = 8190
