"""Tabs of the "What heads do" page (app/screens/heads.py) that have a file of their own; not pages themselves."""
