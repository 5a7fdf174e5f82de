// /bin/clusterprofile-image-install TARGET_DIR (the launcher runs this file): copies the image's own files (bin/,
// lib/, share/ of the root above this file) into TARGET_DIR. The initContainer variant of docs/guides/images.md: a cluster
// without image volumes runs the plugin image as an initContainer that fills an emptyDir, which the controller's
// container then mounts where an image volume would be. Modes are kept (the launchers stay executable).
const { cpSync } = process.getBuiltinModule('node:fs');
const { join } = process.getBuiltinModule('node:path');
const { fileURLToPath } = process.getBuiltinModule('node:url');

const root = fileURLToPath(new URL('../..', import.meta.url));
const args = process.argv.slice(2);
if (args.length !== 1 || args[0] === '' || args[0].startsWith('-')) {
  process.stderr.write(
    'clusterprofile-image-install: ERR_PLUGIN_USAGE: expected one argument, the directory to copy the plugin into (at argv)\nusage: clusterprofile-image-install TARGET_DIR\n',
  );
  process.exit(2);
}
const target = args[0];
for (const dir of ['bin', 'lib', 'share']) {
  try {
    cpSync(join(root, dir), join(target, dir), { recursive: true, force: true, errorOnExist: false });
  } catch (error) {
    process.stderr.write(
      `clusterprofile-image-install: cannot copy ${join(root, dir)} to ${join(target, dir)}: ${error.code ?? error.message}\n`,
    );
    process.exit(1);
  }
}
process.stdout.write(`clusterprofile-image-install: copied the plugin into ${target}\n`);
