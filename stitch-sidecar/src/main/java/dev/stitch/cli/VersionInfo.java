package dev.stitch.cli;

import picocli.CommandLine;

/** {@code stitch --version}: software version and the runtime it found. */
public final class VersionInfo implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
        String v = StitchCli.class.getPackage().getImplementationVersion();
        return new String[] {
            "stitch " + (v == null ? "0.1.0-SNAPSHOT" : v),
            "java " + Runtime.version() + " (" + System.getProperty("java.vm.name") + ")",
            "kernels: " + KernelReport.describe()
        };
    }
}
