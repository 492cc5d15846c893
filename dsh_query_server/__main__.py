from .cli import main

main(["serve", *__import__("sys").argv[1:]])
