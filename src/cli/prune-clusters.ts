import { CLUSTERS_DIR, listSharedClusters, removeSharedCluster, type SharedClusterEntry } from '../postgres/shared-dir';
import { serverUser } from '../postgres/server-user';

/**
 * npm run db:prune-clusters: as root, the clusters of private clones live in CLUSTERS_DIR, linked
 * from their DATA_DIR. This removes only those it can prove unused: no clone holds its lease, its
 * DATA_DIR no longer links to it, and no server runs on it
 * (docs/running-as-root.md#which-clusters-prune-removes). It stops nothing. For each cluster it prints
 * one line: what it did, and why.
 */

/** Why `cluster` is kept, in a few words; undefined when it is proved unused. */
function keptBecause(cluster: SharedClusterEntry): string | undefined {
  const { home, owner, lease, linkedFromOwner, serverPid } = cluster;
  const byHand = `remove it by hand: rm -r ${home}`;
  if (owner === undefined)
    return 'not made by this version of the service (no owner mark); remove it by hand if unused';
  if (lease === 'elsewhere') {
    return `${owner} is on another file system, so no lease can prove whether it still uses it; once that clone is gone, ${byHand}`;
  }
  if (lease === 'none') {
    return (
      'it has no lease (made by an older version, or by a first start that did not finish); ' +
      `start ${owner} once to give it one, or, if that clone is gone, ${byHand}`
    );
  }
  if (lease === 'held') {
    return `in use, a clone holds its lease (last started from ${owner}${linkedFromOwner ? '' : ', since renamed or moved'})`;
  }
  if (linkedFromOwner) return `${owner} still links to it, though it no longer holds its lease (a start renews it)`;
  if (serverPid !== undefined) {
    return `no clone holds its lease, but a server still runs on it (process ${serverPid}); stop it (kill -INT ${serverPid}) and prune again`;
  }
  return undefined;
}

function main(): void {
  const user = serverUser();
  if (!user) {
    console.log(`nothing to prune: only a service run as root keeps clusters in ${CLUSTERS_DIR}`);
    return;
  }
  const clusters = listSharedClusters();
  for (const cluster of clusters) {
    const why = keptBecause(cluster);
    if (why !== undefined) {
      console.log(`kept ${cluster.home}: ${why}`);
    } else {
      removeSharedCluster(cluster, user);
      console.log(
        `removed ${cluster.home}: no clone holds its lease, and ${cluster.owner}, where it was last started from, no longer links to it`,
      );
    }
  }
  if (clusters.length === 0) console.log(`no clusters in ${CLUSTERS_DIR}`);
}

try {
  main();
} catch (err) {
  console.error(`db:prune-clusters failed: ${err instanceof Error ? err.message : err}`);
  process.exit(1);
}
