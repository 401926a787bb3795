"""The engine's pure logic: no Django, no database, no project imports."""
