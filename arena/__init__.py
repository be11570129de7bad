"""Tournaments between agents: the deal loop, duplicate-deck schedules, results, Elo ratings, plots and Ray tasks."""
