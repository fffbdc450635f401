#!/bin/sh
# Run once by the postgres image when it creates the cluster: lets the replica stream from it.
echo "host replication all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
