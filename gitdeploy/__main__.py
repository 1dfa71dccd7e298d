from gitdeploy.cli.main import main

main()
