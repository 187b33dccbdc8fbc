"""The routing-regime study's page (reports/routing/): when does a capsule network's routing leave uniform?"""
