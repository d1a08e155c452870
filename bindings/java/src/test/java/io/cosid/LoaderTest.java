package io.cosid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** How the library is found, each in a fresh JVM (a JVM loads it once). */
class LoaderTest {
    record Run(int exit, String out) {}

    private static Run run(String... properties) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED"));
        cmd.addAll(List.of(properties));
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), LoaderProbe.class.getName()));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().put("COSID_STORE", "memory:");
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        return new Run(p.exitValue(), out);
    }

    @Test
    void fromTheJarsResourcesWithNoSetup() throws Exception {
        Run r = run();
        assertEquals(0, r.exit(), r.out());
        assertTrue(r.out().contains("version " + Cosid.version()), r.out());
        assertTrue(r.out().matches("(?s).*id [1-9][0-9]+.*"), r.out());
    }

    @Test
    void fromAPathGivenByTheProperty() throws Exception {
        Path lib = Path.of(LoaderTest.class.getResource("/io/cosid/native/linux-x86_64/libcosid.so").toURI());
        Run r = run("-Dcosid.library.path=" + lib);
        assertEquals(0, r.exit(), r.out());
        Run missing = run("-Dcosid.library.path=/nonexistent/libcosid.so");
        assertEquals(3, missing.exit(), missing.out());
        assertTrue(missing.out().contains("UnsatisfiedLinkError: cosid: -Dcosid.library.path=/nonexistent/libcosid.so"
                + " names no file"), missing.out());
    }

    @Test
    void anotherPlatformGetsAClearError() throws Exception {
        Run r = run("-Dos.arch=aarch64");
        assertEquals(3, r.exit(), r.out());
        assertTrue(r.out().contains("carries libcosid for linux-x86_64 only, not for linux-aarch64"), r.out());
        assertTrue(r.out().contains("-Dcosid.library.path"), r.out());
    }

    @Test
    void aLibraryOfAnotherAbiIsRefused() {
        Native.checkVersion("0.1.0", null);
        Native.checkVersion("0.1.0", "0.1.0");
        Native.checkVersion("0.1.3", "0.1.0");
        Native.checkVersion("0.1.0", "0.1.1-SNAPSHOT");
        Native.checkVersion("1.4.0", "1.2.0");
        for (String[] pair : new String[][] {{"0.2.0", "0.1.0"}, {"0.1.0", "0.2.0"}, {"2.0.0", "1.9.0"}, {"x", "0.1.0"}}) {
            UnsatisfiedLinkError e = org.junit.jupiter.api.Assertions.assertThrows(UnsatisfiedLinkError.class,
                    () -> Native.checkVersion(pair[0], pair[1]));
            assertTrue(e.getMessage().contains("version " + pair[0]), e.getMessage());
        }
    }
}
