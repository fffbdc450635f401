import { stopServer } from '../postgres/embedded-postgres';
import { CLUSTERS_DIR, listSharedClusters, removeSharedCluster } from '../postgres/shared-dir';
import { serverUser } from '../postgres/server-user';

/**
 * npm run db:prune-clusters: as root, the clusters of private clones live in CLUSTERS_DIR, linked
 * from their DATA_DIR. This removes each one whose DATA_DIR no longer links to it (a deleted
 * clone), stopping its server first if one still runs. Directories it did not make and mark are
 * listed, never removed.
 */
async function main(): Promise<void> {
  const user = serverUser();
  if (!user) {
    console.log(`nothing to prune: only a service run as root keeps clusters in ${CLUSTERS_DIR}`);
    return;
  }
  const clusters = listSharedClusters();
  for (const cluster of clusters) {
    if (cluster.owner === undefined) {
      console.log(
        `kept ${cluster.home}: not made by this version of the service (no owner mark); remove it by hand if unused`,
      );
    } else if (cluster.inUse) {
      console.log(`kept ${cluster.home}: the cluster of ${cluster.owner}`);
    } else {
      await stopServer(cluster.dataDir);
      removeSharedCluster(cluster, user);
      console.log(`removed ${cluster.home}: ${cluster.owner} no longer uses it`);
    }
  }
  if (clusters.length === 0) console.log(`no clusters in ${CLUSTERS_DIR}`);
}

main().catch((err) => {
  console.error(`db:prune-clusters failed: ${err instanceof Error ? err.message : err}`);
  process.exit(1);
});
