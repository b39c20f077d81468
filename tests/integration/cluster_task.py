"""One task of a loopback TF1 cluster, run as its own process by test_cluster_tf.py.

Usage: ``python cluster_task.py PS W0 W1 JOB INDEX OUT_DIR SLEEP_MS STEPS``.
A ``ps`` task (or any task with SLEEP_MS ``serve``: in-graph replication,
where the test's own client drives every task) serves until killed. A worker
builds the between-graph replicated model (variables on the ps,
``replica_device_setter``), whose input is a ``tf.data`` pipeline sleeping
``SLEEP_MS`` per element in ``tf.py_function``; worker 0 initializes the
variables, both run one warm-up step, then one untraced step (step 0) under
``ProfileContext(task=...)``, wait at a file barrier in OUT_DIR and run STEPS
traced training steps (steps 1..STEPS): the traced steps of both workers start
together, whatever each took to start up and to run its step 0.
"""

from __future__ import annotations

import os
import sys
import time

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

import tensorflow as tf  # noqa: E402

import tfprof_lite  # noqa: E402

tf1 = tf.compat.v1


def _model(index: int, spec: tf.train.ClusterSpec, sleep_ms: int) -> tuple[object, object]:
    setter = tf1.train.replica_device_setter(
        worker_device=f"/job:worker/task:{index}", cluster=spec
    )
    with tf1.device(setter):
        global_step = tf1.train.get_or_create_global_step()
        weights = tf1.get_variable("w", [256, 256])
        bias = tf1.get_variable("b", [256], initializer=tf1.zeros_initializer())

        def slow(i: tf.Tensor) -> tf.Tensor:
            time.sleep(sleep_ms / 1000.0)
            return tf.cast(i, tf.float32)

        data = tf.data.Dataset.range(10_000).map(
            lambda i: tf.fill([256], tf.py_function(slow, [i], tf.float32))
        )
        batch = tf1.data.make_one_shot_iterator(data.batch(8)).get_next()
        hidden = tf.matmul(tf.matmul(batch, weights) + bias, weights)
        loss = tf.reduce_mean(hidden)
        train = tf1.train.GradientDescentOptimizer(1e-9).minimize(loss, global_step=global_step)
    return train, tf1.report_uninitialized_variables()


def _barrier(out: str, index: int, workers: int) -> None:
    open(os.path.join(out, f"ready.{index}"), "w").close()
    while not all(os.path.exists(os.path.join(out, f"ready.{i}")) for i in range(workers)):
        time.sleep(0.001)


def main() -> None:
    ps, w0, w1, job, index_text, out, sleep_text, steps_text = sys.argv[1:9]
    index = int(index_text)
    spec = tf.train.ClusterSpec({"ps": [ps], "worker": [w0, w1]})
    server = tf1.train.Server(spec, job_name=job, task_index=index)
    if job == "ps" or sleep_text == "serve":
        print("ready", flush=True)
        server.join()
        return
    tf1.disable_eager_execution()
    train, uninitialized = _model(index, spec, int(sleep_text))
    config = tf1.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{index}"])
    with tf1.Session(server.target, config=config) as sess:
        if index == 0:
            sess.run(tf1.global_variables_initializer())
        while len(sess.run(uninitialized)):
            time.sleep(0.05)
        sess.run(train)  # warm-up: the input pipeline and the rendezvous start
        task_dir = os.path.join(out, f"w{index}")
        steps = int(steps_text)
        with tfprof_lite.ProfileContext(
            task_dir,
            trace_steps=range(1, steps + 1),
            dump_steps=[],
            task=f"/job:worker/task:{index}",
        ):
            sess.run(train)  # step 0, untraced
            _barrier(out, index, 2)
            for _ in range(steps):
                sess.run(train)
    print("done", flush=True)


if __name__ == "__main__":
    main()
