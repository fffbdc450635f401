import fs from 'node:fs';

/**
 * `npm start` runs the service as npm -> sh -c "node dist/server.js" -> node. When npm is killed
 * with SIGTERM it passes the signal to the shell only, and a SIGKILL reaches no one: the service
 * would go on serving by itself, holding the port and its embedded PostgreSQL, with nothing left
 * to stop it. So when npm started this process, we watch npm and call `onGone` once it has died.
 *
 * Linux only (it reads /proc); elsewhere, and when not started by npm, it does nothing.
 */

const POLL_MS = 1_000;

interface ProcessIdentity {
  pid: number;
  /** Start time in clock ticks since boot: tells a live npm from a new process that reuses its pid. */
  startTime: string;
}

/** Parent pid, start time and state of a process, from /proc/<pid>/stat; undefined when it is gone. */
function readStat(pid: number): { ppid: number; startTime: string; state: string } | undefined {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may contain spaces: split after it.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { state: fields[0], ppid: Number(fields[1]), startTime: fields[19] };
}

function isNpm(pid: number): boolean {
  try {
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
    // npm sets its title to "npm <command>"; before that its argv is "node .../npm-cli.js ...".
    return (
      /^npm(\s|$)/.test(cmdline) || /(^|\/)npm-cli\.js(\s|$)/.test(cmdline) || /(^|\s)\S*\/npm(\s|$)/.test(cmdline)
    );
  } catch {
    return false;
  }
}

function findNpm(): ProcessIdentity | undefined {
  let pid = process.ppid;
  // npm is our parent, or the parent of the shell it ran us through.
  for (let depth = 0; depth < 3 && pid > 1; depth++) {
    const stat = readStat(pid);
    if (!stat) return undefined;
    if (isNpm(pid)) return { pid, startTime: stat.startTime };
    pid = stat.ppid;
  }
  return undefined;
}

export function watchNpmParent(onGone: () => void): void {
  if (process.platform !== 'linux' || !process.env.npm_lifecycle_event) return;
  const npm = findNpm();
  if (!npm) return;
  const timer = setInterval(() => {
    const stat = readStat(npm.pid);
    if (stat && stat.startTime === npm.startTime && stat.state !== 'Z') return;
    clearInterval(timer);
    onGone();
  }, POLL_MS);
  timer.unref();
}
