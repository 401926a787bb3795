from django.contrib.postgres.operations import TrigramExtension
from django.db import migrations
from pgvector.django import VectorExtension


class Migration(migrations.Migration):
    """pgvector (trail and chunk embeddings) and pg_trgm (text search in the console)."""

    dependencies: list = []

    operations = [VectorExtension(), TrigramExtension()]
