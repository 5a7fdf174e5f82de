/*
 * /bin/clusterprofile-<type>-plugin in a plugin image (scripts/image.mjs, docs/guides/images.md).
 *
 * Why it exists: an image volume is mounted wherever the pod spec says (/plugins, /opt/x, ...) into a container that
 * may hold no libc, no shell and no Node.js. The runtime the image carries (Node.js and the shared libraries it
 * links, with their own dynamic loader) is therefore only reachable relative to where the image is mounted: a
 * shebang needs an interpreter at an absolute path, and so does an ELF's PT_INTERP. This program is static (no
 * loader, no libc of the pod), finds its own file, and replaces itself (execv, same pid) with
 *
 *   <root>/lib/clusterprofile-runtime/ld-linux-x86-64.so.2 --argv0 <argv[0]>
 *       --library-path <root>/lib/clusterprofile-runtime
 *       <root>/lib/clusterprofile-runtime/node <root>/lib/<its own name>/main.mjs <its arguments...>
 *
 * where <root> is the directory above the one holding it (the mount point). Environment, stdin, stdout, stderr,
 * signals and the exit status are the plugin's own: nothing runs between exec and exit. It reads no environment
 * variable and no file but /proc/self/exe (its own path; without /proc, argv[0] when that names a path).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *name = "clusterprofile-plugin";

/* One line on stderr, "<name>: <what> <path>: <error>", and exit status 1 (no credential). */
static void fail(const char *what, const char *path, int error) {
  fprintf(stderr, "%s: %s %s: %s\n", name, what, path, strerror(error));
  exit(1);
}

#define INCOMPLETE "the plugin image is incomplete or unreadable:"

/* Writes "<root>/lib/<rest>" into out; fails on truncation. */
static void join(char *out, size_t size, const char *root, const char *rest) {
  int n = snprintf(out, size, "%s/lib/%s", root, rest);
  if (n < 0 || (size_t)n >= size) fail("the plugin image is mounted at too long a path:", root, ENAMETOOLONG);
}

int main(int argc, char **argv) {
  static char self[PATH_MAX];
  ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length > 0) {
    self[length] = '\0';
  } else if (argc > 0 && argv[0] != NULL && strchr(argv[0], '/') != NULL) {
    if (realpath(argv[0], self) == NULL) fail("cannot resolve its own path", argv[0], errno);
  } else {
    fail("cannot find its own path (no /proc/self/exe, argv[0] not a path):", argc > 0 && argv[0] != NULL ? argv[0] : "", ENOENT);
  }

  /* self = <root>/bin/<name> */
  char *slash = strrchr(self, '/');
  if (slash == NULL) fail("cannot find its own path:", self, EINVAL);
  *slash = '\0';
  name = slash + 1;
  slash = strrchr(self, '/');
  if (slash == NULL) fail("must be in the bin directory of the plugin image, not in", self[0] == 0 ? "/" : self, EINVAL);
  *slash = '\0';
  const char *root = self; /* "" when the image is at / */

  static char runtime[PATH_MAX], loader[PATH_MAX], node[PATH_MAX], entry[PATH_MAX], suffix[NAME_MAX + 16];
  join(runtime, sizeof runtime, root, "clusterprofile-runtime");
  join(loader, sizeof loader, root, "clusterprofile-runtime/ld-linux-x86-64.so.2");
  join(node, sizeof node, root, "clusterprofile-runtime/node");
  int n = snprintf(suffix, sizeof suffix, "%s/main.mjs", name);
  if (n < 0 || (size_t)n >= sizeof suffix) fail("its file name is too long:", name, ENAMETOOLONG);
  join(entry, sizeof entry, root, suffix);
  if (access(entry, R_OK) != 0) fail(INCOMPLETE " cannot read", entry, errno);

  char **args = calloc((size_t)argc + 8, sizeof *args);
  if (args == NULL) fail("out of memory", "", ENOMEM);
  int i = 0;
  args[i++] = loader;
  args[i++] = "--argv0";
  args[i++] = argc > 0 && argv[0] != NULL ? argv[0] : (char *)name;
  args[i++] = "--library-path";
  args[i++] = runtime;
  args[i++] = node;
  args[i++] = entry;
  for (int a = 1; a < argc; a++) args[i++] = argv[a];
  args[i] = NULL;
  execv(loader, args);
  fail(INCOMPLETE " cannot run", loader, errno);
  return 1;
}
