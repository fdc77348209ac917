package dev.stitch.sync;

/** Outcome of {@link AdmissionControl#admit}. */
public sealed interface Admission permits Admission.Admitted, Admission.Rejected {

    /** Admitted: the request may be forwarded; release the lease when the response has been relayed. */
    record Admitted(Lease lease) implements Admission {
    }

    /**
     * Refused before forwarding.
     *
     * @param reason  why
     * @param current the version being served
     * @param target  the version the constraint asked for (exact or min); -1 for {@link Reason#ENGINE_UNAVAILABLE}
     * @param latest  the newest version seen on the board
     */
    record Rejected(Reason reason, long current, long target, long latest) implements Admission {
    }

    enum Reason {
        /** 409 WeightVersionNotReady: the replica is behind the target (also wakes the sync worker). */
        NOT_READY,
        /** 409 WeightVersionTooOld: an exact pin below the served version. */
        TOO_OLD,
        /** 503 EngineUnavailable: engine weights are in an unknown state after a failed commit. */
        ENGINE_UNAVAILABLE
    }
}
