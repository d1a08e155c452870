package io.cosid;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Locale;

/**
 * Finds libcosid: the file named by the system property {@value #PATH_PROPERTY} if it is set, else the copy this
 * jar carries for the platform under {@code /io/cosid/native/<os>-<arch>/}, extracted once to a private temporary
 * file (owner-only permissions) that is deleted as soon as it is loaded (the mapping stays). As sqlite-jdbc and
 * zstd-jni do.
 */
final class NativeLoader {
    /** The system property naming a libcosid to load instead of the jar's. */
    static final String PATH_PROPERTY = "cosid.library.path";

    /** The platforms the jar carries a library for. */
    static final String SUPPORTED = "linux-x86_64";

    private NativeLoader() {}

    static SymbolLookup load() {
        String given = System.getProperty(PATH_PROPERTY);
        if (given != null && !given.isEmpty()) {
            Path path = Path.of(given).toAbsolutePath();
            if (!Files.isRegularFile(path)) {
                throw new UnsatisfiedLinkError(
                        "cosid: -D" + PATH_PROPERTY + "=" + given + " names no file; expected the path of libcosid.so");
            }
            return open(path);
        }
        String platform = platform();
        if (!SUPPORTED.equals(platform)) {
            throw new UnsatisfiedLinkError("cosid: this jar carries libcosid for " + SUPPORTED + " only, not for "
                    + platform + " (os.name=" + System.getProperty("os.name") + ", os.arch="
                    + System.getProperty("os.arch") + "); build libcosid for it (cargo build --release -p cosid-ffi)"
                    + " and set -D" + PATH_PROPERTY + "=/path/to/libcosid");
        }
        String resource = "/io/cosid/native/" + platform + "/libcosid.so";
        try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new UnsatisfiedLinkError("cosid: the jar has no " + resource + " (built without"
                        + " -Dcosid.native.dir?); set -D" + PATH_PROPERTY + "=/path/to/libcosid.so");
            }
            Path dir = Path.of(System.getProperty("java.io.tmpdir"));
            Path file = Files.createTempFile(dir, "cosid-", ".so",
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
            try {
                Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
                return open(file);
            } finally {
                Files.deleteIfExists(file);
            }
        } catch (IOException e) {
            UnsatisfiedLinkError error = new UnsatisfiedLinkError(
                    "cosid: cannot extract " + resource + " to java.io.tmpdir (" + e + "); set -D" + PATH_PROPERTY);
            error.initCause(e);
            throw error;
        }
    }

    private static SymbolLookup open(Path path) {
        try {
            return SymbolLookup.libraryLookup(path, Arena.global());
        } catch (IllegalArgumentException e) {
            UnsatisfiedLinkError error = new UnsatisfiedLinkError("cosid: cannot load " + path + ": " + e.getMessage());
            error.initCause(e);
            throw error;
        }
    }

    /** {@code <os>-<arch>} in the names of the jar's folders. */
    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        String o = os.startsWith("linux") ? "linux" : os.startsWith("mac") ? "macos"
                : os.startsWith("windows") ? "windows" : os.replace(' ', '_');
        String a = switch (arch) {
            case "amd64", "x86_64" -> "x86_64";
            case "aarch64", "arm64" -> "aarch64";
            default -> arch;
        };
        return o + "-" + a;
    }
}
