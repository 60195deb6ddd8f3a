"""The benchmark's 10-node pipeline on LangGraph and on Google ADK, against the stub model.

Each node sends "Improve the text you are given." as its instruction and the previous node's
answer (the first: the run's input) to an OpenAI-compatible chat completions endpoint (the
stub), non-streaming, and hands the answer to the next node, as the runner's benchmark does.

    python peers.py FRAMEWORK once URL         # one run, then exit (a whole process)
    python peers.py FRAMEWORK warm URL RUNS    # RUNS runs in one process, after RUNS/10 warm-up
    python peers.py FRAMEWORK procs URL N      # N whole processes of `once`, after one warm-up

FRAMEWORK is `langgraph` or `adk`. `warm` prints, per node: the whole run, the same ten model
calls made straight through the framework's own model client, and their difference (the
framework's orchestration overhead per LLM node). Run by `run.sh` beside this file; never by
CI.
"""

import asyncio
import sys
import time

NODES = 10
INSTRUCTION = "Improve the text you are given."
INPUT = "Kafka consumer lag"
MODEL = "gpt-bench"
KEY = "sk-bench"
# What a `once` process prints when its run has finished (before the interpreter tears down).
RAN = b"run finished\n"


def langgraph(url):
    """(one_run, direct_calls) for LangGraph with LangChain's ChatOpenAI."""
    from typing import TypedDict

    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, StateGraph

    llm = ChatOpenAI(base_url=url, api_key=KEY, model=MODEL, max_retries=0)

    class State(TypedDict):
        text: str

    def node(state):
        reply = llm.invoke([SystemMessage(INSTRUCTION), HumanMessage(state["text"])])
        return {"text": reply.content}

    graph = StateGraph(State)
    previous = START
    for i in range(NODES):
        graph.add_node(f"n{i}", node)
        graph.add_edge(previous, f"n{i}")
        previous = f"n{i}"
    graph.add_edge(previous, END)
    app = graph.compile()

    def one_run():
        out = app.invoke({"text": INPUT})
        assert out["text"], out

    def direct_calls():
        text = INPUT
        for _ in range(NODES):
            text = llm.invoke([SystemMessage(INSTRUCTION), HumanMessage(text)]).content

    return one_run, direct_calls


def adk(url):
    """(one_run, direct_calls) for ADK: a SequentialAgent of LlmAgents on LiteLlm."""
    import litellm
    from google.adk.agents import LlmAgent, SequentialAgent
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    model = LiteLlm(model=f"openai/{MODEL}", api_base=url, api_key=KEY)
    agents = []
    for i in range(NODES):
        # Each agent sees only its instruction and the previous answer (from the state), as
        # the other pipelines do, not the whole conversation.
        source = "{input}" if i == 0 else "{n%d}" % (i - 1)
        agents.append(
            LlmAgent(
                name=f"n{i}",
                model=model,
                instruction=f"{INSTRUCTION}\n\n{source}",
                include_contents="none",
                output_key=f"n{i}",
            )
        )
    pipeline = SequentialAgent(name="pipeline", sub_agents=agents)
    runner = InMemoryRunner(agent=pipeline, app_name="bench")
    loop = asyncio.new_event_loop()

    async def run_async():
        session = await runner.session_service.create_session(
            app_name="bench", user_id="bench", state={"input": INPUT}
        )
        last = None
        async for event in runner.run_async(
            user_id="bench",
            session_id=session.id,
            new_message=types.Content(role="user", parts=[types.Part(text=INPUT)]),
        ):
            last = event
        assert last is not None and last.content is not None, last

    def one_run():
        loop.run_until_complete(run_async())

    def direct_calls():
        text = INPUT
        for _ in range(NODES):
            reply = litellm.completion(
                model=f"openai/{MODEL}",
                api_base=url,
                api_key=KEY,
                messages=[
                    {"role": "system", "content": INSTRUCTION},
                    {"role": "user", "content": text},
                ],
            )
            text = reply.choices[0].message.content

    return one_run, direct_calls


def processes(framework, url, n):
    """Spawns `once` n times (after one warm-up): exec -> exit wall time, peak RSS."""
    import os
    import subprocess

    walls, peaks = [], []
    crashed_after_run = 0
    for i in range(n + 1):
        t = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, __file__, framework, "once", url], stdout=subprocess.PIPE
        )
        out = child.stdout.read()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            # A run that finished and then crashed in the interpreter's teardown (ADK's has ended
            # with SIGSEGV there) still measured exec -> exit; a run that did not finish did not.
            if RAN not in out:
                sys.exit(f"{framework}: a run exited {code} before it finished")
            crashed_after_run += 1
        if i > 0:
            walls.append(wall * 1000)
            peaks.append(usage.ru_maxrss)
    walls.sort()
    peaks.sort()
    print(f"{framework}: {n} processes, exec -> exit median {walls[len(walls) // 2]:.1f} ms "
          f"(min {walls[0]:.1f}, max {walls[-1]:.1f}); peak RSS median {peaks[len(peaks) // 2]} KiB "
          f"(max {peaks[-1]})")
    if crashed_after_run:
        print(f"{framework}: {crashed_after_run} of {n + 1} processes crashed at exit, after their run")


def main():
    framework, mode, url = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "procs":
        processes(framework, url, int(sys.argv[4]))
        return
    one_run, direct_calls = {"langgraph": langgraph, "adk": adk}[framework](url)
    if mode == "once":
        one_run()
        sys.stdout.buffer.write(RAN)
        sys.stdout.flush()
        return
    runs = int(sys.argv[4])
    for _ in range(max(runs // 10, 3)):
        one_run()
        direct_calls()
    run_s = direct_s = 0.0
    for _ in range(runs):
        t = time.perf_counter()
        one_run()
        run_s += time.perf_counter() - t
        t = time.perf_counter()
        direct_calls()
        direct_s += time.perf_counter() - t
    per = 1e6 / (runs * NODES)
    print(f"{framework}: runs {runs}, nodes per run {NODES}")
    print(f"{framework}: run, per node:           {run_s * per:10.1f} us")
    print(f"{framework}: direct calls, per call:  {direct_s * per:10.1f} us")
    print(f"{framework}: overhead per LLM node:   {(run_s - direct_s) * per:10.1f} us")


if __name__ == "__main__":
    main()
