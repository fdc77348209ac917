package dev.stitch.sidecar.control;

import com.code_intelligence.jazzer.junit.FuzzTest;

/** Fuzzes the {@code /rpc_sync_from_bulletin_board} body: a target version or an IllegalArgumentException, nothing else. */
class ControlBodyFuzzTest {

    @FuzzTest
    void controlBody(byte[] input) {
        try {
            ControlEndpoints.parseTargetVersion(input);
        } catch (IllegalArgumentException expected) {
            // the endpoint answers 400 with this message
        }
    }
}
