"""The frontier crawls (Perseus 4.2-4.3).

Grid crawl, hull path and hull crawl, clock fitting, max flow, the end repairs
and the straggler lookup.
"""
