// The npm registry reachable on our development machines lacks @swc/core's darwin and
// win32 binaries, so `npm install` there leaves them out of package-lock.json and a
// later `npm ci` refuses the lock. This adds the missing entries (never installed on
// Linux: npm skips them by os/cpu). Run it after `npm install` changes the lock.
import { readFileSync, writeFileSync } from 'node:fs';

const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
const platforms = {
  'darwin-arm64': ['darwin', 'arm64'],
  'darwin-x64': ['darwin', 'x64'],
  'linux-arm-gnueabihf': ['linux', 'arm'],
  'linux-ppc64-gnu': ['linux', 'ppc64'],
  'linux-s390x-gnu': ['linux', 's390x'],
  'win32-arm64-msvc': ['win32', 'arm64'],
  'win32-ia32-msvc': ['win32', 'ia32'],
  'win32-x64-msvc': ['win32', 'x64'],
};
let added = 0;
for (const [dir, entry] of Object.entries(lock.packages)) {
  if (!dir.endsWith('node_modules/@swc/core') || !entry.optionalDependencies) continue;
  for (const [name, range] of Object.entries(entry.optionalDependencies)) {
    const key = `${dir.slice(0, -'@swc/core'.length)}${name}`;
    const platform = platforms[name.replace('@swc/core-', '')];
    if (lock.packages[key] || !platform) continue;
    lock.packages[key] = {
      version: range.replace(/^[\^~=]/, ''),
      cpu: [platform[1]],
      license: 'Apache-2.0',
      optional: true,
      os: [platform[0]],
      engines: { node: '>=10' },
    };
    added++;
  }
}
writeFileSync('package-lock.json', `${JSON.stringify(lock, null, 2)}\n`);
console.log(`lock-optional-platforms: added ${added} entries`);
